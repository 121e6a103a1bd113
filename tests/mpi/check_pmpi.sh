#!/bin/sh
# check_pmpi.sh NM PLUGIN LAYER - the plugin and the program's MPI layer
# (src/pmpi) stay out of each other's way:
#   - the plugin calls no MPI function by its MPI_ name (src/pmpi/names.h
#     maps each to PMPI_), so none of its calls reach the layer;
#   - the layer exports only MPI_* and otm_pmpi_attach;
#   - it needs no library but libc, and every MPI symbol it uses is weak,
#     so that it loads into any process the launcher reaches.
set -u
nm=$1
plugin=$2
layer=$3
failures=0
count=0
check() {
    count=$((count + 1))
    if [ -z "$2" ]; then
        echo "ok $count - $1"
    else
        failures=$((failures + 1))
        echo "not ok $count - $1"
        printf '%s\n' "$2" | sed 's/^/#   /'
    fi
}

check "the plugin calls MPI only by PMPI_ names (else: add the name to src/pmpi/names.h)" \
    "$("$nm" -D --undefined-only "$plugin" | awk '$2 ~ /^MPI_/ {print $2}')"
check "the layer exports MPI_* and otm_pmpi_attach only" \
    "$("$nm" -D --defined-only "$layer" |
       awk '$2 != "A" { n = $3; sub(/@.*/, "", n); if (n !~ /^(MPI_|otm_pmpi_attach$)/) print n }')"
check "every MPI symbol the layer uses is weak" \
    "$("$nm" -D --undefined-only "$layer" | awk '$2 ~ /^(PMPI_|MPI_|ompi_)/ && $1 == "U" {print $2}')"
count_weak=$("$nm" -D --undefined-only "$layer" | awk '$2 ~ /^PMPI_/' | wc -l)
check "the layer refers to PMPI_* ($count_weak of them)" \
    "$([ "$count_weak" -ge 70 ] || echo "only $count_weak")"
check "the layer needs no library but libc" \
    "$(LC_ALL=C readelf -d "$layer" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -v '^libc\.so')"
echo "1..$count"
[ "$failures" -eq 0 ]
