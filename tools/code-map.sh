#!/bin/sh
# code-map.sh - what calls what in the core, and how long functions are.
#
#   tools/code-map.sh graph [BUILD_DIR]   the core's call graph between its
#       files, from the members of the otm_core library in BUILD_DIR
#       (default: build): for each file, the core files whose functions it
#       calls, then an order of the files or the cycles found (exit 1).
#       Build the tree first.
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

graph() {
    dir=${1:-build}
    lib=$(find "$dir" -name libotm_core.a 2>/dev/null | head -n 1)
    [ -n "$lib" ] || { echo "code-map: no libotm_core.a under $dir (build it first)" >&2; exit 1; }
    # The archive's members, not every object left in the build tree.
    objs=$(for m in $(ar t "$lib"); do
        find "$dir/src/CMakeFiles/otm_core.dir" -name "$m"; done | sort)
    for o in $objs; do
        f=$(basename "$o" .c.o)
        nm "$o" | awk -v f="$f" '$1 ~ /^[0-9a-f]+$/ && $2 ~ /[TtDdBbRr]/ { print "D", f, $3 }
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
*) sed -n '2,14p' "$0" >&2; exit 2 ;;
esac
