#!/bin/sh
# code-map.sh - what calls what in a library, and how long functions are.
#
#   tools/code-map.sh graph [BUILD_DIR [LIBRARY]]   the call graph between
#       the files of LIBRARY (a CMake target: otm_core, the default;
#       otm_device; omptarget_rtl_mpi, the plugin), from its members in
#       BUILD_DIR (default: build): for each file, the files of the library
#       whose functions it calls, then an order of the files or the cycles
#       found (exit 1). A static library's members are its archive's; a
#       shared library's, the objects CMake lists for it in
#       LIBRARY.objects. Build the tree first.
#   tools/code-map.sh includes            the core's "otm/..." and local
#       includes, per file of src/core/
#   tools/code-map.sh functions [N] [DIR...]   the N (default 10) longest
#       function definitions in DIR (default: src), in lines from the
#       signature to the closing brace
#
# Only POSIX sh, awk, ar, nm, sort and tsort: it runs wherever the project
# builds.
set -eu
cd "$(dirname "$0")/.."
mode=${1:-graph}
[ $# -gt 0 ] && shift

# The objects library $2 is made of, under build directory $1: the members,
# not every object left in the build tree (a file moved or renamed leaves
# its old object behind).
members() {
    lib=$(find "$1" -name "lib$2.a" 2>/dev/null | head -n 1)
    if [ -n "$lib" ]; then
        objdir=$(find "$1" -type d -name "$2.dir" | head -n 1)
        for m in $(ar t "$lib"); do find "$objdir" -name "$m"; done | sort
        return
    fi
    list=$(find "$1" -name "$2.objects" 2>/dev/null | head -n 1)
    [ -n "$list" ] || { echo "code-map: no lib$2.a nor $2.objects under $1" \
                             "(build it first)" >&2; exit 1; }
    sort "$list"
}

graph() {
    dir=${1:-build}
    objs=$(members "$dir" "${2:-otm_core}")
    [ -n "$objs" ] || { echo "code-map: ${2:-otm_core} has no members under $dir" >&2; exit 1; }
    # Only global definitions: a static function of one file may share
    # its name with another file's global one.
    for o in $objs; do
        f=$(basename "$o" .c.o)
        nm "$o" | awk -v f="$f" '$1 ~ /^[0-9a-f]+$/ && $2 ~ /[TDBR]/ { print "D", f, $3 }
                                 $1 == "U" { print "U", f, $2 }'
    done | awk '
        $1 == "D" { def[$3] = $2; next }
        { use[NR] = $2 " " $3 }
        END {
            for (i in use) {
                split(use[i], u, " ")
                if ((u[2] in def) && def[u[2]] != u[1]) edge[u[1] " " def[u[2]]] = 1
            }
            for (e in edge) print e
        }' | sort >"${TMPDIR:-/tmp}/code-map.$$"
    awk '{ out[$1] = out[$1] " " $2 } END { for (f in out) print f ":" out[f] }' \
        "${TMPDIR:-/tmp}/code-map.$$" | sort
    # A cycle exists when the edges cannot be ordered (tsort reports it).
    if tsort "${TMPDIR:-/tmp}/code-map.$$" >/dev/null 2>"${TMPDIR:-/tmp}/code-map.$$.err"; then
        printf 'order (callers first): '
        tsort "${TMPDIR:-/tmp}/code-map.$$" | tr '\n' ' '
        echo
        echo "cycles: none"
    else
        echo "cycles:"
        status=1
        sed -e "s/^tsort: [^:]*: /  /" -e "s/^tsort: /  /" "${TMPDIR:-/tmp}/code-map.$$.err"
    fi
    rm -f "${TMPDIR:-/tmp}/code-map.$$" "${TMPDIR:-/tmp}/code-map.$$.err"
    return "${status:-0}"
}

includes() {
    for f in src/core/*.c src/core/*.h; do
        printf '%s:' "$(basename "$f")"
        sed -n 's/^#include "\(.*\)"/ \1/p' "$f" | tr -d '\n'
        echo
    done
}

functions() {
    n=${1:-10}
    [ $# -gt 0 ] && shift
    [ $# -gt 0 ] || set -- src
    find "$@" -name '*.c' | sort | xargs awk '
        FNR == 1 { start = 0 }
        /^[A-Za-z_].*\(/ && !/;[ \t]*$/ && !/^(typedef|struct|enum|union)/ && !start {
            start = FNR; name = $0; sub(/\(.*/, "", name); sub(/.*[ *]/, "", name)
            if (/\{.*\}[ \t]*$/) { printf "%5d %s:%d %s\n", 1, FILENAME, start, name; start = 0 }
            next
        }
        start && /^}/ { printf "%5d %s:%d %s\n", FNR - start + 1, FILENAME, start, name; start = 0 }
        start && /;[ \t]*$/ && FNR == start + 1 && /^[A-Za-z_]/ { start = 0 }' |
        sort -rn | head -n "$n"
}

case $mode in
graph) graph "$@" ;;
includes) includes ;;
functions) functions "$@" ;;
*) sed -n '2,17p' "$0" >&2; exit 2 ;;
esac
