#!/usr/bin/env bash
# Compiles iolab's BPF programs (crates/*/src/bpf/*.bpf.c, each beside its
# tracefs twin) into the objects committed beside them, which the crate embeds with
# include_bytes!: the README's first command then needs only Rust, and the
# static aarch64 build carries the same objects (BPF bytecode is the same
# on every architecture). Debian 12's clang 14 and libbpf's headers.
#
#   bash scripts/bpf-build.sh          # regenerate the objects
#   bash scripts/bpf-build.sh --check  # fail if a committed object is not
#                                      # what its source compiles to (CI)
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
need=()
for p in clang-14 libbpf-dev linux-libc-dev; do
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if ((${#need[@]})); then
    apt-get update -qq
    apt-get install -y -qq "${need[@]}" >/dev/null
fi
asm=/usr/include/$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
check=0
[ "${1:-}" = --check ] && check=1
status=0
# Each object: SOURCE:OBJECT:EXTRA-FLAGS. bio.bpf.c is built twice: with
# the per-CPU bio slots (BPF compare-and-swap and bpf_map_lookup_percpu_elem:
# kernels >= 5.19, arm64 >= 6.0), and without, for older kernels, whose
# verifier refuses those instructions even where they are never reached.
builds=()
for src in crates/*/src/bpf/*.bpf.c; do
    builds+=("$src:${src%.c}.o:")
done
builds+=("crates/bio/src/bpf/bio.bpf.c:crates/bio/src/bpf/bio.noslots.bpf.o:-DIOLAB_NO_SLOTS")
for b in "${builds[@]}"; do
    IFS=: read -r src obj extra <<<"$b"
    dir=$(dirname "$src")
    base=$(basename "$src")
    tmp=$(mktemp)
    # Relative paths and a fixed compilation directory: the object is the
    # same wherever the repository is.
    # shellcheck disable=SC2086
    (cd "$dir" && clang-14 -target bpf -mcpu=v3 -O2 -g -Wall -Werror -I"$asm" $extra \
        -fdebug-compilation-dir=. -c "$base" -o "$tmp")
    if ((check)); then
        if ! cmp -s "$tmp" "$obj"; then
            echo "$obj is not what $src compiles to: run bash scripts/bpf-build.sh and commit it" >&2
            status=1
        else
            echo "$obj: current"
        fi
        rm -f "$tmp"
    else
        mv "$tmp" "$obj"
        echo "$obj: $(stat -c %s "$obj") bytes"
    fi
done
exit $status
