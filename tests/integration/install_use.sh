#!/usr/bin/env bash
# install_use.sh — another project can use an installed tally. `cmake --install` into a temporary
# prefix installs exactly the library (shared and static), tally.h, the tally command, tally.pc and
# the CMake package; a program outside the source tree built against that copy with pkg-config and
# with find_package(tally), each shared and static, records ranges and steps into a .tally file
# that the installed `tally report` reads; the installed library finds the installed `tally` for
# its JSON export, and the installed `tally run` finds the installed libtally. A build with the
# Python package installs it too, importable from the prefix.
set -euo pipefail
: "${BUILD:?}" "${SRC:?}"
fail() { echo "install_use: $*" >&2; exit 1; }
skip() { echo "skipped: $*"; exit 77; }

cache() { sed -n "s/^$1:[A-Z]*=//p" "$BUILD/CMakeCache.txt"; }
CMAKE=$(cache CMAKE_COMMAND)
[ -x "$CMAKE" ] || CMAKE=$(command -v cmake) || skip "cmake not found"
CC=$(cache CMAKE_C_COMPILER)
[ -x "$CC" ] || CC=$(command -v cc) || skip "no C compiler"
command -v pkg-config >/dev/null || skip "pkg-config not found (scripts/setup.sh installs it)"
# A sanitized build installs a sanitized libtally: programs linking it need the same runtime.
SAN=$(cache TALLY_SANITIZE)
SAN_FLAGS=""
[ -z "$SAN" ] || SAN_FLAGS="-fsanitize=$SAN"

W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
P="$W/prefix" # the install prefix; everything built here stays under $W, never in $SRC
"$CMAKE" --install "$BUILD" --prefix "$P" > "$W/install.log" 2>&1 ||
    { cat "$W/install.log"; fail "cmake --install failed"; }

# What is installed, and nothing else. The libdir is lib, lib64 or lib/<multiarch>.
pc=$(find "$P" -name tally.pc)
[ -n "$pc" ] || fail "no tally.pc installed"
libdir=$(dirname "$(dirname "$pc")")
L=${libdir#"$P"/}
ver=$(cache CMAKE_PROJECT_VERSION)
so=$(cd "$libdir" && ls libtally.so.*.*.* 2>/dev/null) || fail "no versioned libtally.so in $L"
want=$(printf '%s\n' bin/tally include/tally.h "$L/libtally.a" "$L/libtally.so" \
    "$L/libtally.so.${ver%%.*}" "$L/$so" "$L/pkgconfig/tally.pc" \
    "$L/cmake/tally/tallyConfig.cmake" "$L/cmake/tally/tallyConfigVersion.cmake" \
    "$L/cmake/tally/tallyTargets.cmake" | sort)
have=$(cd "$P" && find . ! -type d | sed 's|^\./||' | grep -v '^'"$L"'/cmake/tally/tallyTargets-.*\.cmake$' | sort)
# The Python package, when this build has it: under the prefix in TALLY_PYTHON_INSTALL_DIR, and
# importable from there by the build's interpreter. The rest is the library's set.
PYDIR=$(cache TALLY_PYTHON_INSTALL_DIR)
if [ -n "$PYDIR" ] && [ -d "$P/$PYDIR/tally" ]; then
    py=$(grep "^$PYDIR/" <<< "$have")
    grep -q "^$PYDIR/tally/__init__.py$" <<< "$py" && grep -q "^$PYDIR/tally/_tally\..*\.so$" <<< "$py" ||
        fail "the Python package is incomplete: $py"
    PY=$(cache _Python3_EXECUTABLE)
    got=$(cd "$W" && PYTHONPATH="$P/$PYDIR" "$PY" -c 'import tally; print(tally.__file__)') ||
        fail "the installed Python package cannot be imported"
    [ "$got" = "$P/$PYDIR/tally/__init__.py" ] || fail "imported $got, not the installed package"
    have=$(grep -v "^$PYDIR/" <<< "$have")
fi
[ "$have" = "$want" ] || fail "installed files differ from the expected set:
$(diff <(echo "$want") <(echo "$have") || true)"
[ "$so" = "libtally.so.$ver" ] || fail "libtally.so.$ver expected, found $so"
for link in libtally.so "libtally.so.${ver%%.*}"; do
    [ -L "$libdir/$link" ] || fail "$link is not a link"
done
# (Whole outputs into variables first: `cmd | grep -q` fails under pipefail when grep quits early.)
dyn=$(readelf -d "$libdir/$so")
grep -q "SONAME.*libtally.so.${ver%%.*}" <<< "$dyn" || fail "wrong SONAME"
ls "$P/$L/cmake/tally"/tallyTargets-*.cmake >/dev/null 2>&1 || fail "no per-configuration targets file"

# The program a user writes, outside the source tree.
mkdir -p "$W/use"
cat > "$W/use/prog.c" <<'C'
#include <stdio.h>
#include <tally.h>
#include <time.h>

static void spin_us(long us)
{
    struct timespec t = {0, us * 1000};
    nanosleep(&t, NULL);
}

int main(void)
{
    int rc = tally_start(NULL); /* TALLY_OUTPUT_DIR, TALLY_NAME, TALLY_WRITE from the test */
    if (rc != 0) {
        fprintf(stderr, "prog: tally_start: %s\n", tally_strerror(rc));
        return 1;
    }
    for (int i = 0; i < 4; i++) {
        TALLY_SCOPE("load", TALLY_DATALOADER) { spin_us(500); }
        TALLY_SCOPE("forward", TALLY_FORWARD) { spin_us(1000); }
        tally_step(8);
    }
    rc = tally_stop();
    if (rc != 0) {
        fprintf(stderr, "prog: tally_stop: %s\n", tally_strerror(rc));
        return 1;
    }
    printf("%s\n", tally_version_string());
    return 0;
}
C
cat > "$W/use/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.18)
project(use_tally C)
find_package(tally REQUIRED)
add_executable(prog prog.c)
target_link_libraries(prog PRIVATE tally::tally)
add_executable(prog_static prog.c)
target_link_libraries(prog_static PRIVATE tally::tally_static)
CM

# (a) pkg-config, shared and static (-ltally taken from libtally.a, Libs.private for the rest).
export PKG_CONFIG_PATH="$libdir/pkgconfig"
[ "$(pkg-config --modversion tally)" = "$ver" ] || fail "tally.pc version is not $ver"
[ "$(realpath "$(pkg-config --variable=libdir tally)")" = "$(realpath "$libdir")" ] ||
    fail "tally.pc's libdir is not the installed one: $(pkg-config --variable=libdir tally)"
CFLAGS="-Wall -Wextra -Werror $SAN_FLAGS"
# shellcheck disable=SC2086,SC2046
"$CC" $CFLAGS -o "$W/use/prog_pc" "$W/use/prog.c" $(pkg-config --cflags --libs tally) \
    -Wl,-rpath,"$libdir" || fail "build with pkg-config failed"
static_libs=$(pkg-config --static --libs tally | sed 's/-ltally/-Wl,-Bstatic -ltally -Wl,-Bdynamic/')
# shellcheck disable=SC2086,SC2046
"$CC" $CFLAGS -o "$W/use/prog_pc_static" "$W/use/prog.c" $(pkg-config --cflags tally) \
    $static_libs || fail "static build with pkg-config failed"

# (b) find_package(tally): tally::tally and tally::tally_static.
"$CMAKE" -S "$W/use" -B "$W/use/build" -DCMAKE_PREFIX_PATH="$P" -DCMAKE_C_COMPILER="$CC" \
    -DCMAKE_C_FLAGS="-Wall -Wextra -Werror $SAN_FLAGS" -DCMAKE_EXE_LINKER_FLAGS="$SAN_FLAGS" \
    > "$W/cmake.log" 2>&1 || { cat "$W/cmake.log"; fail "configuring with find_package(tally) failed"; }
grep -q "tally_DIR:PATH=$P/" "$W/use/build/CMakeCache.txt" ||
    fail "find_package found another tally: $(grep tally_DIR "$W/use/build/CMakeCache.txt")"
"$CMAKE" --build "$W/use/build" > "$W/build.log" 2>&1 ||
    { cat "$W/build.log"; fail "build with find_package(tally) failed"; }

# Shared programs load the installed libtally; static ones load none.
for prog in prog_pc build/prog; do
    libs=$(ldd "$W/use/$prog")
    grep -q "libtally.so.${ver%%.*} => $libdir/" <<< "$libs" ||
        fail "$prog does not load the installed libtally: $(grep tally <<< "$libs")"
done
for prog in prog_pc_static build/prog_static; do
    needed=$(readelf -d "$W/use/$prog")
    if grep NEEDED <<< "$needed" | grep libtally >/dev/null; then fail "$prog needs libtally.so"; fi
done

# Run each: a .tally file that the installed `tally report` reads. Shared: the library finds the
# installed tally (../bin from its libdir, not PATH) and writes the Chrome JSON with it.
n=0
for prog in prog_pc build/prog prog_pc_static build/prog_static; do
    n=$((n + 1))
    out="$W/out$n"
    write=tally,json.gz,summary
    case $prog in *static) write=tally,summary ;; esac # a static program has no library path
    got=$(cd "$W" && env PATH=/usr/bin:/bin TALLY_OUTPUT_DIR="$out" TALLY_NAME="run$n" \
        TALLY_WRITE="$write" "$W/use/$prog" 2> "$W/err$n") ||
        { cat "$W/err$n"; fail "$prog failed"; }
    [ "$got" = "$ver" ] || fail "$prog: tally_version_string() is '$got', not $ver"
    trace="$out/run$n.tally"
    [ -s "$trace" ] || { ls -la "$out" || true; cat "$W/err$n"; fail "$prog wrote no $trace"; }
    "$P/bin/tally" report "$trace" > "$W/report$n" 2>&1 ||
        { cat "$W/report$n"; fail "installed tally report cannot read $prog's trace"; }
    grep -q forward "$W/report$n" || { cat "$W/report$n"; fail "report of $prog lacks 'forward'"; }
    grep -q load "$W/report$n" || { cat "$W/report$n"; fail "report of $prog lacks 'load'"; }
    if [ "$write" != "tally,summary" ]; then
        grep -q "tally command was not found" "$W/err$n" &&
            { cat "$W/err$n"; fail "$prog: the installed libtally did not find the installed tally"; }
        for _ in $(seq 100); do # the export runs detached: wait for it to finish
            [ -n "$(find "$out" -name '*.json.gz')" ] && ! pgrep -f "export --background $trace" >/dev/null &&
                break
            sleep 0.2
        done
        [ -n "$(find "$out" -name '*.json.gz')" ] || { cat "$W/err$n"; fail "$prog: no Chrome JSON written"; }
    fi
done

# The installed tally run injects the installed libtally (not the build tree's).
# shellcheck disable=SC2016 # the variable is the child's, expanded by its shell
(cd "$W" && env PATH=/usr/bin:/bin "$P/bin/tally" run --no-gpu -o "$W/run" -- \
    /bin/sh -c 'echo "injected: $NVTX_INJECTION64_PATH"') > "$W/run.log" 2>&1 ||
    { cat "$W/run.log"; fail "installed tally run --no-gpu failed"; }
if grep -qi "not found" "$W/run.log"; then cat "$W/run.log"; fail "installed tally run did not find libtally"; fi
grep -q "^injected: $(realpath "$libdir")/libtally.so" "$W/run.log" ||
    { cat "$W/run.log"; fail "installed tally run did not inject the installed libtally"; }
echo "install_use: ok (prefix libdir $L; pkg-config and find_package, shared and static)"
