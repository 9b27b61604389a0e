/*
 * test_text_wide.c — text output cuts names at 60 characters unless --wide: nine kernels whose
 * names differ only after the 60th character print as nine names with --wide, as one cut name
 * without it; the columns still line up. Through the renderer (tl_out.wide) and through the
 * `tally ops` and `tally diff` command lines (the tally binary of this build).
 */
#include "report/table.h"
#include "testlib.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NNAMES 9

/* 70-character names equal in their first 64: "void gemm_kernel<...>_variant_N" */
static void long_name(char *buf, size_t n, int i)
{
    snprintf(buf, n, "void at::native::gemm_kernel<float, 128, 64, 8, true, false>::run_v%06d", i);
}

static char *render(const tl_table *t, int wide)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    tl_out o;
    tl_out_begin(&o, f, TL_FMT_TEXT, TL_UNIT_AUTO);
    o.wide = wide;
    tl_out_table(&o, t);
    tl_out_end(&o);
    fclose(f);
    return buf;
}

static tl_table *names_table(void)
{
    static const tl_col cols[] = {{"Name", "name", TL_COL_STR, 1},
                                  {"Calls", "calls", TL_COL_INT, 0}};
    tl_table *t = tl_table_new("Kernels", "kernels", cols, 2);
    char name[128];
    for (int i = 0; i < NNAMES; i++) {
        int r = tl_table_add_row(t);
        long_name(name, sizeof name, i);
        tl_table_str(t, r, 0, name);
        tl_table_int(t, r, 1, 100 + i);
    }
    return t;
}

/* How many of the nine names appear whole in s. */
static int whole_names(const char *s)
{
    char name[128];
    int n = 0;
    for (int i = 0; i < NNAMES; i++) {
        long_name(name, sizeof name, i);
        n += strstr(s, name) != NULL;
    }
    return n;
}

TEST(renderer_cuts_at_60_unless_wide)
{
    tl_table *t = names_table();
    char *cut = render(t, 0), *wide = render(t, 1);
    CHECK(cut && wide);
    if (cut && wide) {
        CHECK_EQ_INT(whole_names(cut), 0);
        CHECK(strstr(cut, "...") != NULL);
        CHECK_EQ_INT(whole_names(wide), NNAMES);
        CHECK(strstr(wide, "...") == NULL);
        /* every row: the name, two blanks, the calls right-aligned under "Calls" */
        char name[128], line[256];
        long_name(name, sizeof name, 3);
        snprintf(line, sizeof line, "\n%s  %*d\n", name, (int)strlen("Calls"), 103);
        CHECK(strstr(wide, line) != NULL);
    }
    free(cut);
    free(wide);
    tl_table_free(t);
}

/* A name of 2000 bytes (C++ template kernels pass 600) prints whole with --wide, indented, and
 * the column beside it still lines up. */
TEST(wide_prints_a_name_of_any_length)
{
    static const tl_col cols[] = {{"Name", "name", TL_COL_STR, 1},
                                  {"Calls", "calls", TL_COL_INT, 0}};
    tl_table *t = tl_table_new("Kernels", "kernels", cols, 2);
    char name[2001];
    for (int i = 0; i < 2000; i++)
        name[i] = (char)('a' + i % 26);
    name[2000] = 0;
    int r = tl_table_add_row(t);
    tl_table_str(t, r, 0, name);
    tl_table_indent(t, r, 0, 2);
    tl_table_int(t, r, 1, 7);
    r = tl_table_add_row(t);
    tl_table_str(t, r, 0, "short");
    tl_table_int(t, r, 1, 8);
    char *wide = render(t, 1);
    CHECK(wide != NULL);
    if (wide) {
        char line[2100];
        snprintf(line, sizeof line, "\n    %s  %5d\n", name, 7);
        CHECK(strstr(wide, line) != NULL);
        snprintf(line, sizeof line, "\nshort%*s  %5d\n", 2004 - 5, "", 8);
        CHECK(strstr(wide, line) != NULL);
    }
    free(wide);
    tl_table_free(t);
}

/* Run the tally binary of this build with args on the fixture; its stdout, malloc'd. */
static char *tally(const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s/tally %s 2>&1", TALLY_BINARY_DIR, args);
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    char chunk[4096];
    size_t k;
    while ((k = fread(chunk, 1, sizeof chunk, p)) > 0)
        fwrite(chunk, 1, k, m);
    fclose(m);
    int rc = pclose(p);
    if (rc != 0) {
        fprintf(stderr, "tally %s: exit %d\n%s\n", args, rc, buf);
        free(buf);
        return NULL;
    }
    return buf;
}

/* A Chrome trace with one host op per long name, each 10 us. */
static int write_fixture(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs("{\"traceEvents\": [\n", f);
    char name[128];
    for (int i = 0; i < NNAMES; i++) {
        long_name(name, sizeof name, i);
        fprintf(f,
                "%s{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"pid\": 1, \"tid\": 1, "
                "\"ts\": %d, \"dur\": 10}\n",
                i ? "," : "", name, 100 + 20 * i);
    }
    fputs("]}\n", f);
    return fclose(f);
}

TEST(cli_wide_prints_names_whole)
{
    char dir[] = "/tmp/tally_wide_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0);
        return;
    }
    char path[256], args[1024];
    snprintf(path, sizeof path, "%s/long.json", dir);
    CHECK(write_fixture(path) == 0);
    snprintf(args, sizeof args, "ops %s", path);
    char *cut = tally(args);
    snprintf(args, sizeof args, "ops %s --wide", path);
    char *wide = tally(args);
    snprintf(args, sizeof args, "diff %s %s --views ops --wide", path, path);
    char *diff = tally(args);
    CHECK(cut && wide && diff);
    if (cut && wide && diff) {
        CHECK_EQ_INT(whole_names(cut), 0);
        CHECK_EQ_INT(whole_names(wide), NNAMES);
        CHECK_EQ_INT(whole_names(diff), NNAMES);
    }
    free(cut);
    free(wide);
    free(diff);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    RUN(renderer_cuts_at_60_unless_wide);
    RUN(cli_wide_prints_names_whole);
    RUN(wide_prints_a_name_of_any_length);
    return test_summary();
}
