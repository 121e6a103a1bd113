#!/bin/sh
# check_exports.sh NM PLUGIN [ABI_HEADER [EXPECTED]] - the plugin's dynamic
# symbol table defines nothing but __tgt_rtl_* functions (and the version
# node VERS1.0 of exports.map); with ABI_HEADER, every entry point it
# declares is defined; with EXPECTED (one name a line: LLVM 14's entry
# points and LLVM 16's), the exported functions are exactly those.
set -u
nm=$1
plugin=$2
abi=${3:-}
expected=${4:-}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

if ! "$nm" -D --defined-only "$plugin" >"$tmp/syms"; then
    echo "FAIL: $nm -D --defined-only $plugin failed"
    exit 1
fi
# "ADDR TYPE NAME[@@VERSION]" -> "TYPE NAME"
awk '{ sub(/@.*/, "", $3); print $2, $3 }' "$tmp/syms" | sort >"$tmp/defined"
total=$(wc -l <"$tmp/defined")
grep -v -e '^T __tgt_rtl_[A-Za-z0-9_]*$' -e '^A VERS1\.0$' "$tmp/defined" >"$tmp/extra"
failures=0
if [ -s "$tmp/extra" ]; then
    echo "FAIL: symbols other than __tgt_rtl_* functions are exported:"
    sed 's/^/    /' "$tmp/extra"
    failures=1
fi
grep -q '^A VERS1\.0$' "$tmp/defined" || { echo "FAIL: no version node VERS1.0"; failures=1; }
count=$(grep -c '^T __tgt_rtl_' "$tmp/defined")
if [ -n "$abi" ]; then
    grep -o '__tgt_rtl_[A-Za-z0-9_]*(' "$abi" | tr -d '(' | sort -u >"$tmp/declared"
    awk '$1 == "T" { print $2 }' "$tmp/defined" | sort -u >"$tmp/exported"
    missing=$(comm -23 "$tmp/declared" "$tmp/exported")
    undeclared=$(comm -13 "$tmp/declared" "$tmp/exported")
    [ -z "$missing" ] || { echo "FAIL: declared in abi.h but not exported:" $missing; failures=1; }
    [ -z "$undeclared" ] || { echo "FAIL: exported but not in abi.h:" $undeclared; failures=1; }
    echo "# abi.h declares $(wc -l <"$tmp/declared") entry points"
fi
if [ -n "$expected" ]; then
    awk '$1 == "T" { print $2 }' "$tmp/defined" | sort -u >"$tmp/exported"
    grep -v '^#' "$expected" | sed '/^$/d' | sort -u >"$tmp/expected"
    missing=$(comm -23 "$tmp/expected" "$tmp/exported")
    extra=$(comm -13 "$tmp/expected" "$tmp/exported")
    [ -z "$missing" ] || { echo "FAIL: expected but not exported:" $missing; failures=1; }
    [ -z "$extra" ] || { echo "FAIL: exported but not expected:" $extra; failures=1; }
    echo "# $(wc -l <"$tmp/expected") expected entry points ($expected)"
fi
echo "# $plugin: $total defined dynamic symbols, of which $count __tgt_rtl_* functions"
[ "$failures" -eq 0 ] && echo "ok - the plugin exports only __tgt_rtl_*"
exit "$failures"
