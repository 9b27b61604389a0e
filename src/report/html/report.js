/*
 * report.js — builds the page of `tally report --html` from the report's tables (docs/html.md).
 *
 * The data is what `tally report --format json` writes (element #tally-data): one member per
 * table, {title, columns: [{key, title, type}], rows, notes}; #tally-timeline holds the steps,
 * phases and stream busy time. Sections chart the tables they know; every other table is shown
 * as a sortable table at the end, so a table a new view adds appears without a change here.
 *
 * For tests: each chart records in window.tallyStatus whether it drew anything; when the page is
 * built, #tally-status gets data-done="1", data-charts="name:ok|blank,..." and data-sections.
 */
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('tally-data').textContent || '{}');
  var TL = JSON.parse(document.getElementById('tally-timeline').textContent || '{}');
  var page = document.getElementById('page');
  var used = {}; /* tables shown by a section */
  var charts = []; /* {name, chart, el} */
  var sections = [];

  /* ---- formatting, as the text report does -------------------------------------------- */
  function fmtTime(us) {
    if (us === null || us === undefined) return '-';
    var a = Math.abs(us);
    if (a >= 1e6) return (us / 1e6).toFixed(3) + ' s';
    if (a >= 1e3) return (us / 1e3).toFixed(3) + ' ms';
    return us.toFixed(a >= 100 ? 1 : 3) + ' \u00b5s';
  }
  /* axis labels: the same units, trailing zeros dropped (200 ms, 1.2 s) */
  function fmtAxis(us) {
    return us === 0 ? '0' : fmtTime(us).replace(/\.?0+ /, ' ');
  }
  function fmtBytes(b) {
    if (b === null || b === undefined) return '-';
    var u = ['B', 'KB', 'MB', 'GB', 'TB'], i = 0, v = b;
    while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; i++; }
    return i ? v.toFixed(2) + ' ' + u[i] : v + ' B';
  }
  /* a bytes axis up to max: ticks at 1, 2 or 5 times a power of ten of the unit the labels use
     (20 MB, 40 MB, ... rather than 19.07 MB, 38.15 MB) */
  function bytesAxis(max) {
    var unit = 1;
    while (max / unit >= 1024 && unit < Math.pow(1024, 4)) unit *= 1024;
    var raw = Math.max(max / unit / 5, 1e-9), p = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / p;
    var step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p * unit;
    return {type: 'value', interval: step, max: Math.ceil(max / step) * step,
            axisLabel: {formatter: function (v) { return v === 0 ? '0' : fmtBytes(v).replace(/\.?0+ /, ' '); }}};
  }
  function fmtCell(type, v) {
    if (v === null || v === undefined) return '-';
    switch (type) {
      case 'time_us': return fmtTime(v);
      case 'bytes': return fmtBytes(v);
      case 'pct': return v.toFixed(2) + '%';
      case 'int': return Number(v).toLocaleString('en-US');
      case 'float': return Number(v).toFixed(3);
      case 'rate': return Number(v).toFixed(2);
      default: return String(v);
    }
  }
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function esc(s) {
    return String(s).replace(/[&<>"]/g, function (c) {
      return {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'}[c];
    });
  }
  function table(key) {
    var t = D[key];
    return t && t.columns && t.rows ? t : null;
  }
  function col(t, k) {
    for (var i = 0; i < t.columns.length; i++) if (t.columns[i].key === k) return t.columns[i];
    return null;
  }

  /* ---- colours: one per category, the same in every chart ----------------------------- */
  var COLORS = {
    Dataloader: '#f59f00', DataLoader: '#f59f00', Forward: '#4c6ef5', Backward: '#7950f2',
    Optimization: '#12b886', Other: '#adb5bd', Kernel: '#3b5bdb', Memcpy: '#f76707',
    Memset: '#fcc419', Communication: '#e64980', Runtime: '#15aabf', 'CPU Exec': '#82c91e',
    busy: '#495057', idle: '#dee2e6', 'Host wait': '#ff8787', 'Kernel wait': '#ffd43b',
    'Other wait': '#ced4da', parameter: '#4c6ef5', gradient: '#7950f2',
    optimizer_state: '#12b886', activation: '#f76707', input: '#f59f00', temporary: '#fcc419',
    unknown: '#adb5bd', allocated: '#4263eb', reserved: '#94d82d'
  };
  var PALETTE = ['#4c6ef5', '#f76707', '#12b886', '#7950f2', '#e64980', '#15aabf', '#82c91e',
                 '#fab005', '#fa5252', '#868e96', '#364fc7', '#c2255c'];
  var nextColor = 0;
  function color(name) {
    if (!(name in COLORS)) COLORS[name] = PALETTE[nextColor++ % PALETTE.length];
    return COLORS[name];
  }

  /* ---- charts ------------------------------------------------------------------------- */
  function chart(parent, name, title, option, cls, height) {
    var box = el('div', {'class': 'chart-box'});
    if (title) box.appendChild(el('h3', null, title));
    var div = el('div', {'class': 'chart' + (cls ? ' ' + cls : ''), 'data-chart': name});
    if (height) div.style.height = height + 'px';
    box.appendChild(div);
    parent.appendChild(box);
    var c = echarts.init(div, null, {renderer: 'svg'});
    option.animation = false;
    option.textStyle = option.textStyle || {fontFamily: 'system-ui, sans-serif'};
    c.setOption(option);
    charts.push({name: name, chart: c, el: div});
    return c;
  }
  function drawn(div) {
    var svg = div.querySelector('svg');
    if (!svg) return false;
    return svg.querySelectorAll('path, rect, circle, polygon, polyline').length > 2;
  }
  function tip(fmt) {
    return {trigger: 'item', confine: true, valueFormatter: fmt};
  }

  /* ---- sortable tables ---------------------------------------------------------------- */
  var LIMIT = 50;
  function dataTable(parent, key, t, opts) {
    opts = opts || {};
    var box = el('div', {'class': 'table-box', id: 'table-' + key});
    box.appendChild(el('h3', null, (t.title || key) + (opts.suffix || '')));
    if (!t.rows.length) {
      box.appendChild(el('div', {'class': 'empty-note'}, 'No rows.'));
      parent.appendChild(box);
      return box;
    }
    /* columns empty on every row (GPU columns of a CPU trace) are left out */
    t = {title: t.title, notes: t.notes, rows: t.rows, columns: t.columns.filter(function (c) {
      return t.rows.some(function (r) { return r[c.key] !== null && r[c.key] !== undefined; });
    })};
    var tab = el('table', {'class': 'data', 'data-table': key});
    var thead = el('thead'), tr = el('tr');
    var rows = t.rows.slice(), shown = Math.min(rows.length, opts.limit || LIMIT);
    var tbody = el('tbody');
    function fill() {
      var html = [];
      for (var r = 0; r < shown && r < rows.length; r++) {
        var row = rows[r], cells = [];
        for (var c = 0; c < t.columns.length; c++) {
          var cc = t.columns[c], v = row[cc.key], s = cc.type === 'str';
          var txt = fmtCell(cc.type, v);
          if (s && row[cc.key + '_level']) txt = '\u2003'.repeat(row[cc.key + '_level']) + txt;
          cells.push('<td class="' + (s ? 's' : '') + (v === null || v === undefined ? ' empty' : '') +
                     '">' + esc(txt) + '</td>');
        }
        html.push('<tr>' + cells.join('') + '</tr>');
      }
      tbody.innerHTML = html.join('');
    }
    t.columns.forEach(function (cc) {
      var th = el('th', {'class': cc.type === 'str' ? 's' : '', title: cc.key}, cc.title);
      var dir = 0;
      if (opts.sortedBy === cc.key) { th.classList.add('sorted-desc'); dir = -1; th.dataset.once = 1; }
      th.addEventListener('click', function () {
        dir = dir === -1 ? 1 : -1; /* numbers: largest first; then the other way */
        if (cc.type === 'str' && dir === -1 && !th.dataset.once) { dir = 1; }
        th.dataset.once = 1;
        rows.sort(function (a, b) {
          var x = a[cc.key], y = b[cc.key];
          if (x === null || x === undefined) return 1;
          if (y === null || y === undefined) return -1;
          if (typeof x === 'string') return dir * x.localeCompare(y);
          return dir * (x - y);
        });
        Array.prototype.forEach.call(tr.children, function (h) {
          h.classList.remove('sorted-asc', 'sorted-desc');
        });
        th.classList.add(dir > 0 ? 'sorted-asc' : 'sorted-desc');
        fill();
      });
      tr.appendChild(th);
    });
    thead.appendChild(tr);
    tab.appendChild(thead);
    tab.appendChild(tbody);
    fill();
    box.appendChild(tab);
    if (rows.length > shown) {
      var more = el('button', {'class': 'more'}, 'Show all ' + rows.length + ' rows');
      more.addEventListener('click', function () { shown = rows.length; fill(); more.remove(); });
      box.appendChild(more);
    }
    if (t.notes && t.notes.length && !opts.noNotes) {
      var ul = el('ul', {'class': 'notes'});
      t.notes.forEach(function (n) { ul.appendChild(el('li', null, n)); });
      box.appendChild(ul);
    }
    used[key] = true;
    parent.appendChild(box);
    return box;
  }

  function section(id, title, sub) {
    var s = el('section', {'class': 'card', id: id});
    s.appendChild(el('h2', null, title));
    if (sub) s.appendChild(el('p', {'class': 'sub'}, sub));
    page.appendChild(s);
    sections.push({id: id, title: title});
    return s;
  }

  /* ---- header, key figures, findings -------------------------------------------------- */
  /* a job (tally report DIR): its ranks table, and no trace of its own */
  function isJob() { return !D.trace && !!table('ranks'); }
  function jobHeader() {
    var rk = table('ranks').rows, rs = table('rank_steps'), co = table('collectives'), bits = [];
    var nums = rk.map(function (r) { return r.rank; });
    var title = 'Job: ' + rk.length + ' rank' + (rk.length === 1 ? '' : 's') +
      (rk.length > 1 ? ' (' + Math.min.apply(null, nums) + '..' + Math.max.apply(null, nums) + ')' : '');
    document.querySelector('header h1').textContent = title;
    document.title = 'tally \u00b7 ' + title;
    if (rs) {
      var steps = {};
      rs.rows.forEach(function (r) { steps[r.step] = 1; });
      bits.push(Object.keys(steps).length + ' steps');
    }
    if (co && co.rows.length) bits.push(co.rows.length + ' collectives matched across ranks');
    var files = rk.map(function (r) { return r.file || ''; });
    var dir = files[0].replace(/[^\/]*$/, '');
    while (dir && files.some(function (f) { return f.indexOf(dir) !== 0; })) dir = dir.replace(/[^\/]*\/?$/, '');
    if (dir && dir !== '/') bits.push('under ' + dir);
    document.getElementById('trace-meta').textContent = bits.join(' \u00b7 ');
  }
  function header() {
    if (isJob()) return jobHeader();
    var m = D.trace || {}, bits = [];
    if (m.format) bits.push(m.format);
    if (m.rank !== null && m.rank !== undefined)
      bits.push('rank ' + m.rank + (m.world_size ? ' of ' + m.world_size : ''));
    if (m.events !== undefined) bits.push(Number(m.events).toLocaleString('en-US') + ' events');
    if (m.threads !== undefined) bits.push(m.threads + ' threads');
    if (m.streams) bits.push(m.streams + ' streams');
    if (m.steps !== undefined) bits.push(m.steps + ' steps');
    if (m.span_us !== undefined) bits.push('span ' + fmtTime(m.span_us));
    (m.devices || []).forEach(function (d) { if (d.name) bits.push(d.name); });
    document.getElementById('trace-meta').textContent = bits.join(' \u00b7 ');
    if (D.messages && D.messages.length) {
      var w = el('div', {'class': 'messages'});
      D.messages.forEach(function (x) { w.appendChild(el('div', null, '\u26a0 ' + x)); });
      page.appendChild(w);
    }
  }

  function kpis() {
    var box = el('div', {'class': 'kpis'}), n = 0;
    function kpi(v, l) { var k = el('div', {'class': 'kpi'}); k.appendChild(el('div', {'class': 'v'}, v)); k.appendChild(el('div', {'class': 'l'}, l)); box.appendChild(k); n++; }
    var perf = table('perf');
    if (perf) perf.rows.forEach(function (r) {
      if (r.name === 'batch_cost') kpi(fmtTime(r.avg_us), 'average step (' + r.steps + ' steps)');
      if (r.name === 'reader_cost') kpi(r.ratio_pct.toFixed(1) + '%', 'reader ratio (data loading)');
    });
    var ips = table('perf_ips');
    if (ips && ips.rows[0] && ips.rows[0].avg !== null)
      kpi(Number(ips.rows[0].avg).toFixed(1), ips.rows[0].unit + ' (average)');
    var gpu = table('gpu');
    if (gpu) gpu.rows.forEach(function (r) { kpi(r.idle_pct.toFixed(1) + '%', r.name + ' idle'); });
    var mem = table('memory');
    if (mem) mem.rows.forEach(function (r) {
      if (r.peak_allocated_bytes !== null) kpi(fmtBytes(r.peak_allocated_bytes), r.device + ' memory peak');
    });
    if (isJob()) {
      var rk = table('ranks').rows, avgs = rk.map(function (r) { return r.step_avg_us; }).filter(function (v) { return v !== null; }).sort(function (a, b) { return a - b; });
      kpi(String(rk.length), 'ranks');
      if (avgs.length) kpi(fmtTime(avgs[Math.floor((avgs.length - 1) / 2)]), 'median of the ranks\' average step');
      var sg = table('stragglers');
      if (sg && sg.rows.length) {
        var w = sg.rows.reduce(function (a, b) { return (b.over_median_pct || 0) > (a.over_median_pct || 0) ? b : a; });
        kpi('+' + (w.over_median_pct || 0).toFixed(1) + '%', 'slowest rank over the median (rank ' + w.slowest_rank + ', step ' + w.step + ')');
      }
      var co = table('collectives');
      if (co && co.rows.length) kpi(fmtTime(co.rows[0].start_skew_us), 'largest collective start skew');
    }
    if (n) page.appendChild(box);
  }

  /* where the evidence of a finding is shown */
  function evidenceOf(f) {
    var s = (f.finding + ' ' + (f.evidence || '')).toLowerCase();
    var has = function (id) { return document.getElementById(id) || pending[id]; };
    var rules = [
      [/straggler/, 'ranks'], [/ranks wait for .* at |collective|skew/, 'collectives'],
      [/rank \d|ranks? wait/, 'ranks'], [/gap|idle|wait/, 'gpu-idle'],
      [/memory|activation|peak|leak|alloc/, 'memory'], [/kernel|launch|short/, 'operators'],
      [/stream|overlap|communication|nccl/, 'timeline'],
      [/operator|self cpu|op /, 'operators'], [/step|dataloader|reader|loader/, 'breakdown']
    ];
    if (f.at_stake_bytes !== null && f.at_stake_bytes !== undefined && has('memory')) return 'memory';
    for (var i = 0; i < rules.length; i++) if (rules[i][0].test(s) && has(rules[i][1])) return rules[i][1];
    return 'tables';
  }
  var pending = {};
  function findings(target) {
    var key = table('findings') ? 'findings' : 'job_findings', t = table(key);
    if (!t) return;
    used[key] = true;
    var s = target;
    if (!t.rows.length) { s.appendChild(el('p', {'class': 'empty-note'}, 'No findings: nothing stands out in this trace.')); return; }
    var tries = {};
    (t.notes || []).forEach(function (n) { var m = /^(\d+)\. (.*)$/.exec(n); if (m) tries[m[1]] = m[2]; });
    var ol = el('ol', {'class': 'findings'});
    t.rows.forEach(function (f) {
      var li = el('li');
      li.appendChild(el('div', {'class': 'what'}, f.finding));
      var stake = [];
      if (f.at_stake_us !== null && f.at_stake_us !== undefined) stake.push(fmtTime(f.at_stake_us));
      if (f.at_stake_bytes !== null && f.at_stake_bytes !== undefined) stake.push(fmtBytes(f.at_stake_bytes));
      li.appendChild(el('div', {'class': 'stake', title: 'at stake'}, stake.join(' \u00b7 ')));
      if (f.evidence) li.appendChild(el('div', {'class': 'ev'}, f.evidence));
      if (tries[f.rank]) li.appendChild(el('div', {'class': 'try'}, tries[f.rank]));
      var id = evidenceOf(f);
      var a = el('a', {'class': 'evidence', href: '#' + id}, '\u2192 evidence: ' + (pending[id] || id));
      li.appendChild(a);
      ol.appendChild(li);
    });
    s.appendChild(ol);
    var rest = (t.notes || []).filter(function (n) { return !/^\d+\. /.test(n); });
    if (rest.length) { var ul = el('ul', {'class': 'notes'}); rest.forEach(function (n) { ul.appendChild(el('li', null, n)); }); s.appendChild(ul); }
  }

  /* ---- step-time breakdown ------------------------------------------------------------ */
  function breakdown() {
    var tally = (D.trace || {}).source === 'tally';
    var steps = tally ? table('model_steps') : table('breakdown') || table('model_steps');
    if (!steps || !steps.rows.length) return;
    var key = tally || !table('breakdown') ? 'model_steps' : 'breakdown';
    var cats = steps.columns.filter(function (c) { return c.type === 'time_us' && c.key !== 'step_us'; });
    var perStep = steps.rows.filter(function (r) { return r.step !== 'Average'; });
    var avg = steps.rows.filter(function (r) { return r.step === 'Average'; })[0] || perStep[0];
    var s = section('breakdown', 'Step time', key === 'breakdown'
      ? 'Each moment of a step in one category (TensorBoard\'s breakdown): the average step and every step.'
      : 'Each step by phase (Dataloader, Forward, Backward, Optimization, Other): the average step and every step.');
    var g = el('div', {'class': 'grid'});
    s.appendChild(g);
    var pie = cats.map(function (c) { return {name: c.title, value: avg[c.key] || 0, itemStyle: {color: color(c.title)}}; })
      .filter(function (d) { return d.value > 0; });
    chart(g, 'breakdown-donut', 'Average step: ' + fmtTime(avg.step_us), {
      tooltip: {trigger: 'item', formatter: function (p) { return esc(p.name) + '<br>' + fmtTime(p.value) + ' (' + p.percent.toFixed(1) + '%)'; }},
      legend: {bottom: 0, type: 'scroll'},
      series: [{type: 'pie', radius: ['42%', '70%'], center: ['50%', '45%'], data: pie,
                label: {formatter: function (p) { return p.percent >= 2 ? p.name + '\n' + p.percent.toFixed(1) + '%' : ''; }},
                labelLine: {show: true}}]
    });
    chart(g, 'breakdown-steps', 'Per step', {
      tooltip: {trigger: 'axis', axisPointer: {type: 'shadow'}, valueFormatter: fmtTime, confine: true},
      legend: {bottom: 0, type: 'scroll'},
      grid: {left: 10, right: 16, top: 16, bottom: 40, containLabel: true},
      xAxis: {type: 'category', data: perStep.map(function (r) { return r.step.replace('ProfilerStep', 'step '); })},
      yAxis: {type: 'value', axisLabel: {formatter: fmtAxis}},
      series: cats.map(function (c) {
        return {name: c.title, type: 'bar', stack: 'step', itemStyle: {color: color(c.title)},
                data: perStep.map(function (r) { return r[c.key] || 0; })};
      })
    });
    dataTable(s, key, steps);
    if (key === 'breakdown') used.breakdown_avg = true;
    if (key === 'model_steps' && table('model')) used.model = true;
  }

  /* ---- timeline ----------------------------------------------------------------------- */
  function timeline() {
    var lanes = (TL.lanes || []).filter(function (l) { return l.segs && l.segs.length; });
    if (!lanes.length) return;
    var s = section('timeline', 'Timeline', 'The steps, their phases and each stream\'s busy time (kernels, copies, memsets; gaps below 1/4000 of the window merged). Drag the slider to zoom.');
    var data = [];
    lanes.forEach(function (l, i) {
      l.segs.forEach(function (g, k) {
        var c = l.kind === 'steps' ? (k % 2 ? '#868e96' : '#adb5bd') : l.kind === 'phases' ? color(g[2]) : COLORS.busy;
        data.push({value: [i, g[0], g[1], g[2] || (l.kind === 'stream' ? 'busy' : '')], itemStyle: {color: c}});
      });
    });
    var names = lanes.map(function (l) { return l.name; });
    var h = Math.max(220, 70 + lanes.length * 38);
    chart(s, 'timeline', null, {
      tooltip: {trigger: 'item', confine: true, formatter: function (p) {
        var v = p.value; return esc(names[v[0]]) + '<br>' + esc(v[3] || '') + ' ' + fmtTime(v[2] - v[1]) + '<br>at +' + fmtTime(v[1]);
      }},
      grid: {left: 220, right: 24, top: 10, bottom: 60},
      dataZoom: [{type: 'slider', filterMode: 'weakFilter', bottom: 10, height: 22, labelFormatter: function (v) { return fmtTime(v); }},
                 {type: 'inside', filterMode: 'weakFilter'}],
      xAxis: {type: 'value', min: 0, max: TL.span_us, axisLabel: {formatter: function (v) { return fmtAxis(v); }}},
      yAxis: {type: 'category', data: names, inverse: true, axisLabel: {width: 200, overflow: 'truncate'}},
      series: [{type: 'custom', encode: {x: [1, 2], y: 0}, data: data,
        renderItem: function (params, api) {
          var lane = api.value(0), a = api.coord([api.value(1), lane]), b = api.coord([api.value(2), lane]);
          var hh = api.size([0, 1])[1] * 0.62;
          var rect = echarts.graphic.clipRectByRect({x: a[0], y: a[1] - hh / 2, width: Math.max(b[0] - a[0], 0.8), height: hh},
            {x: params.coordSys.x, y: params.coordSys.y, width: params.coordSys.width, height: params.coordSys.height});
          return rect && {type: 'rect', shape: rect, style: api.style()};
        }}]
    }, '', h);
    /* what the colours are: the phases the lanes hold, and busy time */
    var keys = [];
    lanes.forEach(function (l) {
      if (l.kind === 'phases') l.segs.forEach(function (g) { if (keys.indexOf(g[2]) < 0) keys.push(g[2]); });
      if (l.kind === 'stream' && keys.indexOf('busy') < 0) keys.push('busy');
    });
    var order = ['Dataloader', 'Forward', 'Backward', 'Optimization', 'busy'];
    keys.sort(function (a, b) { return order.indexOf(a) - order.indexOf(b); });
    if (keys.length) {
      var lg = el('div', {'class': 'legend'});
      keys.forEach(function (k) {
        var item = el('span');
        item.appendChild(el('i', {style: 'background:' + (k === 'busy' ? COLORS.busy : color(k))}));
        item.appendChild(document.createTextNode(k === 'busy' ? 'stream busy' : k));
        lg.appendChild(item);
      });
      s.appendChild(lg);
    }
    var idle = table('gpu_idle');
    if (idle && idle.rows.length) {
      var g = el('div', {'class': 'grid'});
      s.appendChild(g);
      var names2 = idle.rows.map(function (r) { return 'GPU ' + r.device + ' stream ' + r.stream + (r.role ? ' (' + r.role + ')' : ''); });
      chart(g, 'stream-busy', 'Busy and idle per stream (within each stream\'s first to last op)', {
        tooltip: {trigger: 'axis', axisPointer: {type: 'shadow'}, valueFormatter: fmtTime, confine: true},
        legend: {bottom: 0},
        grid: {left: 30, right: 20, top: 10, bottom: 40, containLabel: true},
        xAxis: {type: 'value', axisLabel: {formatter: fmtAxis}},
        yAxis: {type: 'category', data: names2, inverse: true},
        series: [['busy_us', 'busy'], ['idle_us', 'idle']].map(function (p) {
          return {name: p[1], type: 'bar', stack: 's', itemStyle: {color: COLORS[p[1]]}, data: idle.rows.map(function (r) { return r[p[0]]; })};
        })
      });
    }
    if (table('device')) dataTable(s, 'device', table('device'));
  }

  /* ---- operators and kernels ---------------------------------------------------------- */
  function topBars(parent, name, title, t, nameKey, keys, n) {
    var rows = t.rows.filter(function (r) { return !r[nameKey + '_level']; }).slice();
    rows.sort(function (a, b) { return (b[keys[0][0]] || 0) - (a[keys[0][0]] || 0); });
    rows = rows.slice(0, n || 15).reverse();
    if (!rows.length) return;
    chart(parent, name, title, {
      tooltip: {trigger: 'axis', axisPointer: {type: 'shadow'}, valueFormatter: fmtTime, confine: true},
      legend: keys.length > 1 ? {bottom: 0} : undefined,
      grid: {left: 10, right: 24, top: 8, bottom: keys.length > 1 ? 40 : 20, containLabel: true},
      xAxis: {type: 'value', axisLabel: {formatter: fmtAxis}},
      yAxis: {type: 'category', data: rows.map(function (r) { return r[nameKey]; }),
              axisLabel: {width: 230, overflow: 'truncate', fontSize: 11}},
      series: keys.map(function (k, i) {
        return {name: k[1], type: 'bar', barGap: '8%', itemStyle: {color: i ? '#bac8ff' : '#4263eb'},
                data: rows.map(function (r) { return r[k[0]] || 0; })};
      })
    }, 'tall');
  }
  function operators() {
    var op = table('operator'), ops = table('ops'), k = table('kernel');
    if (!op && !ops && !k) return;
    var s = section('operators', 'Operators and kernels', 'The largest by self time; the full tables below sort by any column (click a header).');
    var g = el('div', {'class': 'grid'});
    s.appendChild(g);
    if (op && op.rows.length) topBars(g, 'top-operators', 'Top operators (self CPU time)', op, 'name', [['self_cpu_us', 'Self CPU'], ['cpu_total_us', 'CPU total']]);
    else if (ops && ops.rows.length) topBars(g, 'top-operators', 'Top operators (self CPU time)', ops, 'name', [['self_cpu_us', 'Self CPU'], ['cpu_total_us', 'CPU total']]);
    if (k && k.rows.length) topBars(g, 'top-kernels', 'Top kernels (total time)', k, 'name', [['total_us', 'Total']]);
    if (ops) dataTable(s, 'ops', ops, {limit: 100});
    if (op) dataTable(s, 'operator', op);
    if (k) dataTable(s, 'kernel', k);
  }

  /* ---- GPU idle ----------------------------------------------------------------------- */
  function gpuIdle() {
    var idle = table('gpu_idle'), gaps = table('gpu_gaps'), gpu = table('gpu');
    if (!idle && !gaps && !gpu) return;
    var s = section('gpu-idle', 'GPU idle time', 'When the device waits, and on what: per stream, and the largest gaps.');
    var g = el('div', {'class': 'grid'});
    s.appendChild(g);
    if (idle && idle.rows.length) {
      var names = idle.rows.map(function (r) { return 'GPU ' + r.device + ' stream ' + r.stream; });
      chart(g, 'idle-causes', 'Idle time by cause, per stream', {
        tooltip: {trigger: 'axis', axisPointer: {type: 'shadow'}, valueFormatter: fmtTime, confine: true},
        legend: {bottom: 0},
        grid: {left: 10, right: 20, top: 10, bottom: 50, containLabel: true},
        xAxis: {type: 'value', axisLabel: {formatter: fmtAxis}},
        yAxis: {type: 'category', data: names, inverse: true},
        series: [['host_wait_us', 'Host wait'], ['kernel_wait_us', 'Kernel wait'], ['other_wait_us', 'Other wait']].map(function (p) {
          return {name: p[1], type: 'bar', stack: 'i', itemStyle: {color: COLORS[p[1]]}, data: idle.rows.map(function (r) { return r[p[0]] || 0; })};
        })
      });
    }
    if (gaps && gaps.rows.length) {
      var rows = gaps.rows.slice(0, 15);
      chart(g, 'largest-gaps', 'Largest gaps', {
        tooltip: {trigger: 'item', confine: true, formatter: function (p) {
          var r = rows[p.dataIndex]; return 'GPU ' + r.device + ' stream ' + r.stream + ' at +' + fmtTime(r.start_us) + '<br>' + fmtTime(r.length_us) + ', ' + esc(r.cause) + (r.host_ranges ? '<br>host in ' + esc(r.host_ranges) : '');
        }},
        grid: {left: 10, right: 20, top: 10, bottom: 20, containLabel: true},
        xAxis: {type: 'value', axisLabel: {formatter: fmtAxis}},
        yAxis: {type: 'category', inverse: true, data: rows.map(function (r) { return '#' + r.rank + ' ' + (r.host_ranges || r.cause); }),
                axisLabel: {width: 200, overflow: 'truncate', fontSize: 11}},
        series: [{type: 'bar', data: rows.map(function (r) { return {value: r.length_us, itemStyle: {color: r.cause === 'host wait' || r.cause === 'host' ? COLORS['Host wait'] : '#fa5252'}}; })}]
      });
    }
    if (gpu) dataTable(s, 'gpu', gpu);
    if (idle) dataTable(s, 'gpu_idle', idle);
    if (gaps) dataTable(s, 'gpu_gaps', gaps);
  }

  /* ---- memory ------------------------------------------------------------------------- */
  function memory() {
    var mt = table('memory_timeline'), mem = table('memory'), peak = table('memory_peak'),
        owners = table('memory_peak_owners'), layout = table('memory_layout');
    if (!mt && !mem && !peak) return;
    var s = section('memory', 'Memory', 'Allocated (and reserved) over time with the peak marked; what the peak holds, by category and by layout path.');
    if (mt && mt.rows.length) {
      var devs = [];
      mt.rows.forEach(function (r) { if (devs.indexOf(r.device) < 0) devs.push(r.device); });
      devs.forEach(function (dv, di) {
        var rows = mt.rows.filter(function (r) { return r.device === dv; });
        var pk = mem ? mem.rows.filter(function (r) { return r.device === dv; })[0] : null;
        var series = [{name: 'allocated', type: 'line', step: 'end', symbol: 'none', itemStyle: {color: COLORS.allocated},
          areaStyle: {opacity: 0.12}, data: rows.map(function (r) { return [r.time_us, r.allocated_bytes]; })}];
        if (pk && pk.peak_allocated_bytes !== null)
          series[0].markPoint = {symbol: 'pin', symbolSize: 46, itemStyle: {color: '#e03131'},
            label: {formatter: 'peak', fontSize: 10},
            data: [{name: 'peak', coord: [pk.peak_at_us, pk.peak_allocated_bytes], value: pk.peak_allocated_bytes}],
            tooltip: {formatter: function () { return 'peak ' + fmtBytes(pk.peak_allocated_bytes) + ' at +' + fmtTime(pk.peak_at_us) + (pk.peak_step !== null ? ' (step ' + pk.peak_step + ')' : ''); }}};
        if (rows.some(function (r) { return r.reserved_bytes !== null; }))
          series.push({name: 'reserved', type: 'line', step: 'end', symbol: 'none', itemStyle: {color: COLORS.reserved},
            data: rows.map(function (r) { return [r.time_us, r.reserved_bytes]; })});
        chart(s, 'memory-timeline' + (di ? '-' + di : ''), dv + ': memory over time', {
          tooltip: {trigger: 'axis', confine: true, valueFormatter: fmtBytes, axisPointer: {label: {formatter: function (p) { return p.axisDimension === 'x' ? fmtTime(p.value) : fmtBytes(p.value); }}}},
          legend: {bottom: 0},
          grid: {left: 10, right: 24, top: 30, bottom: 40, containLabel: true},
          xAxis: {type: 'value', scale: true, max: 'dataMax', axisLabel: {showMaxLabel: false, formatter: function (v) { return fmtAxis(v); }}},
          yAxis: bytesAxis(Math.max.apply(null, rows.map(function (r) { return Math.max(r.allocated_bytes || 0, r.reserved_bytes || 0); }).concat([1]))),
          series: series
        });
      });
      used.memory_timeline = true;
    }
    var g = el('div', {'class': 'grid'});
    s.appendChild(g);
    var sbTip = {trigger: 'item', confine: true, formatter: function (p) { return esc(p.treePathInfo.slice(1).map(function (x) { return x.name; }).join(' / ')) + '<br>' + fmtBytes(p.value); }};
    var src = owners && owners.rows.length ? owners : peak;
    if (src && src.rows.length) {
      var tree = {};
      src.rows.forEach(function (r) {
        var d = tree[r.device] = tree[r.device] || {};
        var c = d[r.category] = d[r.category] || {v: 0, kids: []};
        c.v += r.bytes || 0;
        if (r.allocated_by !== undefined) c.kids.push({name: r.allocated_by, value: r.bytes || 0, itemStyle: {color: color(r.category), opacity: 0.7}});
      });
      var devs2 = Object.keys(tree);
      var data = [];
      devs2.forEach(function (d) {
        var kids = Object.keys(tree[d]).map(function (c) { return {name: c, value: tree[d][c].v, itemStyle: {color: color(c)}, children: tree[d][c].kids}; });
        if (devs2.length > 1) data.push({name: d, children: kids, itemStyle: {color: '#868e96'}}); else data = data.concat(kids);
      });
      chart(g, 'memory-categories', 'At the peak, by category' + (src === owners ? ' and by the range that allocated it' : ''), {
        tooltip: sbTip,
        series: [{type: 'sunburst', data: data, radius: ['12%', '92%'], sort: null,
          label: {rotate: 'radial', fontSize: 10, minAngle: 12}, itemStyle: {borderColor: '#fff', borderWidth: 1}}]
      }, 'tall');
    }
    if (layout && layout.rows.length) {
      /* rows in tree order with their level: rebuild the tree */
      var roots = {}, stack = [];
      layout.rows.forEach(function (r) {
        var lvl = r.layer_level || 0, name = r.layer.split('.').pop();
        var node = {name: lvl ? name : r.layer, value: r.total_bytes || 0, children: []};
        if (!lvl) { node.itemStyle = {color: color(r.layer)}; (roots[r.device] = roots[r.device] || []).push(node); }
        else if (stack[lvl - 1]) stack[lvl - 1].children.push(node);
        stack[lvl] = node;
        stack.length = lvl + 1;
      });
      var ds = Object.keys(roots), data2 = [];
      ds.forEach(function (d) { if (ds.length > 1) data2.push({name: d, children: roots[d]}); else data2 = roots[d]; });
      chart(g, 'memory-layout', 'At the peak, by layout path', {
        tooltip: sbTip,
        series: [{type: 'sunburst', data: data2, radius: ['10%', '95%'], sort: null, nodeClick: 'rootToNode',
          label: {show: false}, levels: [{}, {label: {show: true, rotate: 0, overflow: 'none', fontSize: 10, fontWeight: 600, minAngle: 14, color: '#1f2430', textBorderColor: 'rgba(255,255,255,.85)', textBorderWidth: 2}}],
          itemStyle: {borderColor: '#fff', borderWidth: 0.5}}]
      }, 'tall');
    }
    ['memory', 'memory_peak', 'memory_peak_owners', 'memory_ops', 'memory_leaks'].forEach(function (k) { if (table(k)) dataTable(s, k, table(k)); });
    if (layout) dataTable(s, 'memory_layout', layout, {limit: 30});
  }

  /* ---- ranks (a job: tally report DIR) ----------------------------------------------- */
  function ranks() {
    var rs = table('rank_steps'), rk = table('ranks');
    if (!rs && !rk) return;
    var s = section('ranks', 'Ranks', 'Step time per rank and step (a slow rank stands out as a hot row), each rank\'s average and slowest step, and its GPU time in computation and communication.');
    if (rs && rs.rows.length) {
      var ids = [], st = [];
      rs.rows.forEach(function (r) { if (ids.indexOf(r.rank) < 0) ids.push(r.rank); if (st.indexOf(r.step) < 0) st.push(r.step); });
      ids.sort(function (a, b) { return a - b; });
      st.sort(function (a, b) { return a - b; });
      /* the colour is the distance from the step's median over ranks, so that a step slow on
         every rank stays calm and a straggler stands out */
      var pct = function (r) { return r.vs_median_pct || 0; };
      var vals = rs.rows.map(pct);
      var lo = Math.min(0, Math.min.apply(null, vals)), hi = Math.max(1, Math.max.apply(null, vals));
      var cell = {};
      rs.rows.forEach(function (r) { cell[r.rank + ':' + r.step] = r; });
      chart(s, 'rank-heatmap', 'Step time per rank and step (colour: how far over the step\'s median)', {
        tooltip: {trigger: 'item', formatter: function (p) {
          var r = cell[ids[p.value[1]] + ':' + st[p.value[0]]];
          return 'rank ' + r.rank + ', step ' + esc(r.step) + '<br>' + fmtTime(r.step_us) +
            (r.vs_median_pct !== null && r.vs_median_pct !== undefined ? ' (' + (r.vs_median_pct >= 0 ? '+' : '') + r.vs_median_pct.toFixed(1) + '% vs the step\'s median)' : '');
        }},
        grid: {left: 10, right: 30, top: 10, bottom: 78, containLabel: true},
        xAxis: {type: 'category', data: st.map(String), name: 'step', nameLocation: 'middle', nameGap: 26, splitArea: {show: true}},
        yAxis: {type: 'category', data: ids.map(function (r) { return 'rank ' + r; }), inverse: true, splitArea: {show: true}},
        visualMap: {min: lo, max: hi, dimension: 3, calculable: true, orient: 'horizontal', left: 'center', bottom: 0, itemHeight: 220,
                    text: ['over the median', 'at or under'], inRange: {color: ['#e7f5ff', '#a5d8ff', '#ffd8a8', '#f08c00', '#c92a2a']},
                    formatter: function (v) { return (v > 0 ? '+' : '') + v.toFixed(1) + '%'; }},
        series: [{type: 'heatmap', data: rs.rows.map(function (r) { return [st.indexOf(r.step), ids.indexOf(r.rank), r.step_us, pct(r)]; }),
                  label: {show: ids.length * st.length <= 120, fontSize: 10, formatter: function (p) { return fmtAxis(p.value[2]); }},
                  itemStyle: {borderColor: '#fff', borderWidth: 1}}]
      }, '', Math.max(240, 130 + ids.length * 34));
    }
    if (rk && rk.rows.length) {
      var g = el('div', {'class': 'grid'});
      s.appendChild(g);
      var names = rk.rows.map(function (r) { return 'rank ' + r.rank; });
      var bar = {tooltip: {trigger: 'axis', axisPointer: {type: 'shadow'}, valueFormatter: fmtTime, confine: true},
                 legend: {bottom: 0}, grid: {left: 10, right: 24, top: 12, bottom: 40, containLabel: true},
                 xAxis: {type: 'category', data: names}, yAxis: {type: 'value', axisLabel: {formatter: fmtAxis}}};
      function series(keys) {
        return keys.map(function (k) {
          return {name: k[1], type: 'bar', barGap: '10%', itemStyle: {color: k[2]}, data: rk.rows.map(function (r) { return r[k[0]]; })};
        });
      }
      chart(g, 'rank-steps', 'Average and slowest step per rank',
            Object.assign({series: series([['step_avg_us', 'average step', '#4c6ef5'], ['step_max_us', 'slowest step', '#f08c00']])}, bar));
      if (rk.rows.some(function (r) { return r.computation_us || r.communication_us; }))
        chart(g, 'rank-comm', 'GPU time per rank: computation and communication',
              Object.assign({series: series([['computation_us', 'computation', '#4263eb'], ['communication_us', 'communication', '#e64980'],
                                             ['exposed_comm_us', 'exposed communication', '#a61e4d']])}, bar));
      dataTable(s, 'ranks', rk);
    }
    if (rs) dataTable(s, 'rank_steps', rs, {limit: 8});
  }

  function stragglers() {
    var sg = table('stragglers');
    if (!sg) return;
    var s = section('stragglers', 'Stragglers', 'Per step, the slowest rank and how far it is over the median of the ranks (the others wait that long at the next collective).');
    if (sg.rows.length) {
      var rows = sg.rows.slice().sort(function (a, b) { return a.step - b.step; });
      chart(s, 'stragglers', null, {
        tooltip: {trigger: 'item', confine: true, formatter: function (p) {
          var r = rows[p.dataIndex];
          return 'step ' + esc(r.step) + ': rank ' + r.slowest_rank + ' ' + fmtTime(r.slowest_us) + '<br>median ' + fmtTime(r.median_us) +
            ', fastest rank ' + r.fastest_rank + ' ' + fmtTime(r.fastest_us);
        }},
        grid: {left: 10, right: 24, top: 24, bottom: 30, containLabel: true},
        xAxis: {type: 'category', data: rows.map(function (r) { return String(r.step); }), name: 'step', nameLocation: 'middle', nameGap: 22},
        yAxis: {type: 'value', axisLabel: {formatter: function (v) { return v + '%'; }}, name: 'slowest rank over the median', nameTextStyle: {align: 'left'}},
        series: [{type: 'bar', barMaxWidth: 48, data: rows.map(function (r) {
          return {value: r.over_median_pct || 0, itemStyle: {color: color('rank ' + r.slowest_rank)}};
        }), label: {show: rows.length <= 40, position: 'top', fontSize: 10, formatter: function (p) { return 'rank ' + rows[p.dataIndex].slowest_rank; }}}]
      }, '', 280);
    }
    dataTable(s, 'stragglers', sg, {sortedBy: 'over_median_pct'});
  }

  function collectives() {
    var co = table('collectives');
    if (!co) return;
    var s = section('collectives', 'Collectives', 'Each collective matched across ranks by name and call number: how much later the last rank started it than the first (the others wait that long), largest skew first.');
    if (co.rows.length) {
      var rows = co.rows.slice(0, 15);
      var short = function (n) { return n.replace(/\(.*$/, ''); };
      chart(s, 'collectives', 'Largest start skews', {
        tooltip: {trigger: 'item', confine: true, formatter: function (p) {
          var r = rows[p.dataIndex];
          return esc(short(r.name)) + ' (call ' + r.call + ')<br>skew ' + fmtTime(r.start_skew_us) + ': rank ' + r.first_rank + ' first, rank ' + r.last_rank + ' last<br>duration ' + fmtTime(r.dur_min_us) + ' .. ' + fmtTime(r.dur_max_us);
        }},
        grid: {left: 24, right: 70, top: 8, bottom: 20, containLabel: true},
        xAxis: {type: 'value', axisLabel: {formatter: fmtAxis}},
        yAxis: {type: 'category', inverse: true, data: rows.map(function (r) { return short(r.name) + ' #' + r.call; }),
                axisLabel: {width: 300, overflow: 'truncate', fontSize: 11}},
        series: [{type: 'bar', barMaxWidth: 22, data: rows.map(function (r) { return {value: r.start_skew_us, itemStyle: {color: color('rank ' + r.last_rank)}}; }),
                  label: {show: true, position: 'right', fontSize: 10, formatter: function (p) { return 'last: rank ' + rows[p.dataIndex].last_rank; }}}]
      }, '', Math.max(160, 50 + rows.length * 26));
    }
    dataTable(s, 'collectives', co, {sortedBy: 'start_skew_us'});
  }

  /* ---- every other table -------------------------------------------------------------- */
  function others() {
    var keys = Object.keys(D).filter(function (k) { return table(k) && !used[k]; });
    if (!keys.length) return;
    var s = section('tables', 'More tables', 'Every other table of the report, as tally report prints it; click a header to sort.');
    keys.forEach(function (k) { dataTable(s, k, table(k)); });
  }

  /* ---- the page ----------------------------------------------------------------------- */
  function build() {
    header();
    kpis();
    /* the findings come first but link to sections built after them: names known up front */
    pending = {breakdown: 'step time', timeline: 'timeline', operators: 'operators', 'gpu-idle': 'GPU idle',
               memory: 'memory', ranks: 'ranks', stragglers: 'stragglers', collectives: 'collectives',
               tables: 'tables'};
    var fs = null;
    used.findings = used.job_findings = true;
    if (table('findings') || table('job_findings'))
      fs = section('findings', 'Findings', (isJob() ? 'The job\'s findings, ranked' : 'Ranked') + ' by the time (or memory) at stake; each links to its evidence below.');
    breakdown();
    timeline();
    operators();
    gpuIdle();
    memory();
    ranks();
    stragglers();
    collectives();
    others();
    /* keep only links to sections that exist */
    var exists = {};
    sections.forEach(function (x) { exists[x.id] = x.title; });
    for (var id in pending) if (!exists[id]) delete pending[id];
    if (fs) findings(fs);
    var nav = document.getElementById('nav');
    sections.forEach(function (x) { nav.appendChild(el('a', {href: '#' + x.id}, x.title)); });
    window.addEventListener('resize', function () { charts.forEach(function (c) { c.chart.resize(); }); });
  }

  function report() {
    var st = document.getElementById('tally-status') || document.body.appendChild(el('div', {id: 'tally-status', hidden: ''}));
    var res = charts.map(function (c) { return c.name + ':' + (drawn(c.el) ? 'ok' : 'blank'); });
    st.setAttribute('data-charts', res.join(','));
    st.setAttribute('data-sections', sections.map(function (x) { return x.id; }).join(','));
    st.setAttribute('data-tables', Array.prototype.map.call(document.querySelectorAll('table[data-table]'), function (t) { return t.getAttribute('data-table'); }).join(','));
    st.setAttribute('data-done', '1');
  }

  try {
    build();
  } catch (e) {
    window.onerror(String(e && e.stack || e), '', 0, 0);
  }
  setTimeout(report, 50);
})();
