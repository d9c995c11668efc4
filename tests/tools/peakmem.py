#!/usr/bin/python3
"""peakmem.py - run a command and report its memory at the peak.

    peakmem.py CMD ARGS...

Prints one line on stdout after the command ends:
    status maxrss_kib anon_kib file_kib
status: the command's exit status; maxrss_kib: its peak resident set size
(getrusage's ru_maxrss, what /usr/bin/time -v reports); anon_kib and
file_kib: the largest RssAnon (allocated memory) and RssFile (mapped files:
weights, libraries) seen in /proc/PID/status, sampled every 5 ms.  The
weights leave the process layer by layer (model_layer_release), so peak
RSS is the allocated memory plus a few layers of weights and the
libraries' pages; RssAnon is the part an estimate of allocations predicts.
The command's stdout and stderr pass through unchanged.
"""
import os
import subprocess
import sys
import time


def status(pid):
    v = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                k, _, rest = line.partition(":")
                if k in ("RssAnon", "RssFile"):
                    v[k] = int(rest.split()[0])
    except OSError:
        pass
    return v


def main():
    p = subprocess.Popen(sys.argv[1:])
    anon = file = 0
    while True:
        pid, st, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        v = status(p.pid)
        anon = max(anon, v.get("RssAnon", 0))
        file = max(file, v.get("RssFile", 0))
        time.sleep(0.005)
    code = os.waitstatus_to_exitcode(st)
    print(code, ru.ru_maxrss, anon, file)


if __name__ == "__main__":
    main()
