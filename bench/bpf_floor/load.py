#!/usr/bin/env python3
"""Loads one BPF object with libbpf, attaches every program in it, and
holds them until SIGINT or SIGTERM (the links go with the process, also on
SIGKILL). bench/trace_overhead.py's floor-* modes run it on the objects of
floor.bpf.c.

    load.py OBJECT
"""

import ctypes
import signal
import sys

lib = ctypes.CDLL("libbpf.so.1", use_errno=True)
lib.bpf_object__open_file.restype = ctypes.c_void_p
lib.bpf_object__open_file.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
lib.bpf_object__load.argtypes = [ctypes.c_void_p]
lib.bpf_object__next_program.restype = ctypes.c_void_p
lib.bpf_object__next_program.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
lib.bpf_program__attach.restype = ctypes.c_void_p
lib.bpf_program__attach.argtypes = [ctypes.c_void_p]
lib.bpf_program__name.restype = ctypes.c_char_p
lib.bpf_program__name.argtypes = [ctypes.c_void_p]

obj = lib.bpf_object__open_file(sys.argv[1].encode(), None)
if not obj:
    sys.exit(f"error: cannot open {sys.argv[1]}: errno {ctypes.get_errno()}")
if lib.bpf_object__load(obj) != 0:
    sys.exit(f"error: cannot load {sys.argv[1]}: errno {ctypes.get_errno()}")
links, prog = [], None
while True:
    prog = lib.bpf_object__next_program(obj, prog)
    if not prog:
        break
    link = lib.bpf_program__attach(prog)
    if not link:
        name = lib.bpf_program__name(prog).decode()
        sys.exit(f"error: cannot attach {name}: errno {ctypes.get_errno()}")
    links.append(link)
print(f"attached {len(links)} programs", file=sys.stderr, flush=True)
# Both set here: a shell starts a background job with SIGINT ignored.
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
signal.pause()
