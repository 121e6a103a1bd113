#!/bin/sh
# check_readme.sh PRINTER README - every variable name and alias the plugin
# reads (as printed by `PRINTER --names`) must appear in README, so that the
# README's table cannot fall behind settings.c.
set -u
printer=$1
readme=$2

if [ ! -f "$readme" ]; then
    echo "check_readme: $readme does not exist; paste the table printed by" \
         "$printer into it" >&2
    exit 1
fi
names=$("$printer" --names) || { echo "check_readme: $printer failed" >&2; exit 1; }
missing=0
for name in $names; do
    if ! grep -q -w -- "$name" "$readme"; then
        echo "check_readme: $name is not documented in $readme" >&2
        missing=1
    fi
done
if [ "$missing" -ne 0 ]; then
    echo "check_readme: regenerate the table with $printer" >&2
fi
exit "$missing"
