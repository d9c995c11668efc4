#!/usr/bin/env bash
# tests/fuzz/whose, the triage of tests/fuzz/run: the frame it picks from
# sanitizer reports is the first one outside the runtime, its interceptors
# spelled either way (with the runtime's sources, or as a libc name in the
# fuzz binary itself), libFuzzer and libc.  Reports abridged from real
# ones (ASan heap overflow in our code, LSan leaks inside libhdf5).
. "$(dirname "$0")/../lib.sh"
W=$SS_ROOT/tests/fuzz/whose
pick() { printf '%s\n' "$1" | "$W" | sed 's/^ *#[0-9]* 0x[0-9a-f]* in //; s/ .*//'; }
leak1='==12==ERROR: LeakSanitizer: detected memory leaks

Direct leak of 7 byte(s) in 1 object(s) allocated from:
    #0 0x55d1c2a3f1be in strdup (/work/x/build/fuzz/fuzz_trace+0xa31be) (BuildId: 5e1f)
    #1 0x7f33a1b2c3d4 in H5MM_xstrdup (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0x2c3d4)
    #2 0x55d1c2b00000 in h5_open /work/x/src/lib/io/h5io.c:120:3'
t_eq "a leak from strdup in the fuzz binary: the libhdf5 frame" "H5MM_xstrdup" "$(pick "$leak1")"
leak2='Direct leak of 64 byte(s) in 1 object(s) allocated from:
    #0 0x4f2c5e in malloc (/work/x/build/fuzz/fuzz_trace+0x4f2c5e)
    #1 0x7f0000001234 in H5FL_reg_malloc (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0x1234)'
t_eq "a leak from malloc in the fuzz binary: the libhdf5 frame" "H5FL_reg_malloc" "$(pick "$leak2")"
leak3='    #0 0x7f11 in __interceptor_strdup ../../../../src/libsanitizer/asan/asan_interceptors.cpp:439
    #1 0x7f22 in calloc (/work/x/build/fuzz/fuzz_tsv+0x1)
    #2 0x7f33 in H5E__push_stack (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0x9)'
t_eq "interceptors with sources, then a bare one: the libhdf5 frame" "H5E__push_stack" "$(pick "$leak3")"
ours='==9==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602
READ of size 4 at 0x602 thread T0
    #0 0x55aa in __asan_memcpy (/work/x/build/fuzz/fuzz_tsv+0x10)
    #1 0x55bb in tsv_field /work/x/src/lib/io/tsv.c:88:9
    #2 0x55cc in LLVMFuzzerTestOneInput /work/x/tests/fuzz/fuzz_tsv.c:20:2
    #3 0x55dd in fuzzer::Fuzzer::ExecuteCallback(unsigned char const*, unsigned long) (/work/x/build/fuzz/fuzz_tsv+0x20)'
t_eq "an overflow in our code after an interceptor: our frame" "tsv_field" "$(pick "$ours")"
mallocish='    #0 0x55aa in malloc_trim_wrapper /work/x/src/lib/util/mem.c:10:2'
t_eq "a function of ours whose name starts like an interceptor's is ours" "malloc_trim_wrapper" "$(pick "$mallocish")"
only='    #0 0x4f2c5e in malloc (/work/x/build/fuzz/fuzz_trace+0x4f2c5e)
    #1 0x7f in __libc_start_main /build/glibc/csu/../csu/libc-start.c:308:16'
t_eq "only runtime frames: nothing" "" "$(pick "$only")"
t_done
