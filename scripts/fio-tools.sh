#!/bin/sh
# Fetches fio 3.33's source from Debian (the release iolab follows and
# Debian bookworm installs) into DIR (default /var/cache/iolab/fio-3.33),
# checked against the Debian source package's SHA-256, and prints the path
# of its tools/ directory: what tests/fio_tools.rs takes as FIO_TOOLS.
# fio's tools are GPL: run, never vendored.
set -eu
dir=${1:-/var/cache/iolab/fio-3.33}
url=http://deb.debian.org/debian/pool/main/f/fio/fio_3.33.orig.tar.gz
sum=d2410e13e0f379d061d077cc5ae325835bb7c6186aa7bafc1df954cbc9b014fc
if [ ! -f "$dir/tools/fiologparser.py" ]; then
    mkdir -p "$dir"
    tmp=$(mktemp "$dir/.fio.XXXXXX")
    trap 'rm -f "$tmp"' EXIT
    curl -fsSL --retry 3 -o "$tmp" "$url"
    echo "$sum  $tmp" | sha256sum -c --quiet - || {
        echo "fio-tools.sh: $url does not match Debian's SHA-256 $sum" >&2
        exit 1
    }
    tar -xzf "$tmp" -C "$dir" --strip-components=1 fio-3.33/tools
fi
echo "$dir/tools"
