#!/bin/sh
# check_llvm19.sh - libomptarget 19 as ci/llvm19.sh builds it, against
# Debian's own, and the adapter inside it against our plugin.
#
# usage: check_llvm19.sh exports OURS DEBIANS
#        check_llvm19.sh no-plugin OURS PROGRAM
#        check_llvm19.sh entries PLUGIN ADAPTER_SOURCE
#
# exports: every function and object a program can link against in
#   Debian's libomptarget.so.19.1 (C names: a program built by clang-19
#   calls __tgt_*, omp_*, llvm_omp_* and the like), ours exports too, with
#   the same version (VERS1.0), so a program linked against Debian's runs
#   on ours; and ours exports no C name Debian's does not, so nothing of
#   the plugin inside it (createPlugin_mpi). C++ names (Debian's exports two
#   thread-local variables of its OMPT code) are not part of what programs
#   link against.
# no-plugin: OURS copied alone into a directory, without our plugin beside
#   it, and PROGRAM (omp_host_fallback, built by clang-19) run on it without
#   the launcher: one line says the plugin could not be loaded, there are
#   no devices, and the program passes on the host.
# entries: every __tgt_rtl_* name the adapter (src/nextgen/src/rtl.cpp,
#   OtmRTLNames) looks up is exported by PLUGIN (libomptarget.rtl.mpi.so):
#   the contract between the two, checked without LLVM 19.
set -u
me=check_llvm19.sh
[ $# -eq 3 ] || { sed -n '5,7p' "$0" | sed 's/^# //' >&2; exit 2; }
mode=$1
ours=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/check_llvm19.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# name@version of each defined dynamic symbol with a C name.
c_exports() {
    objdump -T "$1" | grep -v '[*]UND[*]' | awk 'NF >= 6 && $NF !~ /^_Z/ {
        v = $(NF-1); gsub(/[()]/, "", v); print $NF "@" v }' | sort -u
}

case $mode in
exports)
    c_exports "$3" >"$tmp/debian"
    c_exports "$ours" >"$tmp/ours"
    [ -s "$tmp/debian" ] || { echo "$me: no exports read from $3"; exit 1; }
    missing=$(comm -23 "$tmp/debian" "$tmp/ours")
    if [ -n "$missing" ]; then
        echo "$me: exported by Debian's libomptarget but not by ours:"
        echo "$missing"
        exit 1
    fi
    extra=$(comm -13 "$tmp/debian" "$tmp/ours")
    if [ -n "$extra" ]; then
        echo "$me: exported by ours but not by Debian's (the plugin inside?):"
        echo "$extra"
        exit 1
    fi
    echo "$me: the $(wc -l <"$tmp/debian") C exports of Debian's libomptarget 19" \
         "are ours, with their versions, and nothing more"
    ;;
no-plugin)
    cp "$ours" "$tmp/"
    unset PMI_RANK PMI_SIZE PMI_FD PMIX_RANK OMPI_COMM_WORLD_SIZE OMPTARGET_MPI_LAUNCHER \
          LD_PRELOAD 2>/dev/null
    LD_LIBRARY_PATH=$tmp timeout -k 5 60 "$3" >"$tmp/out" 2>"$tmp/err"
    status=$?
    fail() {
        echo "$me: $*"
        echo "----- stdout -----"; cat "$tmp/out"
        echo "----- stderr -----"; cat "$tmp/err"
        exit 1
    }
    [ "$status" -eq 0 ] || fail "the program ended with status $status"
    grep -q '^PASS ' "$tmp/out" || fail "no PASS line on stdout"
    grep -q "^omptarget-mpi: cannot load the plugin: $tmp/libomptarget.rtl.x86_64.so: .*: no MPI devices\$" \
        "$tmp/err" || fail "no line saying the plugin could not be loaded"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "more than that line on stderr"
    echo "$me: without the plugin beside it: one line, no devices, the program passed on the host"
    ;;
entries)
    sed -n '/OtmRTLNames\[\] = {/,/^};/s/^ *"\(__tgt_rtl_[a-z_]*\)",$/\1/p' "$3" |
        sort -u >"$tmp/wanted"
    nm -D --defined-only "$ours" | awk '{ print $NF }' | sed 's/@.*//' | sort -u >"$tmp/have"
    [ "$(wc -l <"$tmp/wanted")" -ge 20 ] || { echo "$me: no entry point names read from $3"; exit 1; }
    missing=$(comm -23 "$tmp/wanted" "$tmp/have")
    if [ -n "$missing" ]; then
        echo "$me: the adapter looks up entry points $ours does not export:"
        echo "$missing"
        exit 1
    fi
    echo "$me: all $(wc -l <"$tmp/wanted") entry points the adapter looks up are exported"
    ;;
*)
    sed -n '5,7p' "$0" | sed 's/^# //' >&2
    exit 2
    ;;
esac
