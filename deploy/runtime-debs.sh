#!/bin/sh
# runtime-debs.sh PROGRAM...
#
# Prints, one per line, the Debian/Ubuntu packages that hold the shared
# libraries the programs link to directly (their DT_NEEDED entries, found
# where ldd finds them; apt brings the rest as dependencies), so that the
# Dockerfile's runtime stage installs what its build stage linked against,
# whatever the distribution names them (libmicrohttpd12 on Debian 12, libmicrohttpd12t64
# on Ubuntu 24.04, ...). Fails when a library belongs to no package.
set -eu
out=$(mktemp)
trap 'rm -f "$out"' EXIT
needed=$(for prog in "$@"; do
    readelf -d "$prog" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
done | sort -u)
for name in $needed; do
    case "$name" in ld-linux*) continue ;; esac   # the dynamic loader: libc6
    lib=$(ldd "$@" | awk -v n="$name" '$1 == n && $2 == "=>" {print $3; exit}')
    if [ -z "$lib" ] || [ "$lib" = "not" ]; then
        echo "runtime-debs.sh: $name is not found" >&2
        exit 1
    fi
    found=
    # Merged /usr: dpkg may have recorded the file under /usr/lib or /lib.
    for path in "$lib" "$(readlink -f "$lib")" "/usr$lib" "${lib#/usr}"; do
        pkg=$(dpkg-query -S "$path" 2>/dev/null | sed -n '1s/[:,].*//p') || true
        if [ -n "$pkg" ]; then
            echo "$pkg" >> "$out"
            found=1
            break
        fi
    done
    if [ -z "$found" ]; then
        echo "runtime-debs.sh: no package holds $lib" >&2
        exit 1
    fi
done
sort -u "$out"
