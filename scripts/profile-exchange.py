#!/usr/bin/env python3
"""Where the CPU of the int8 exchange goes (docs/compression.md, "Profile").

usage: scripts/profile-exchange.py PERF_DATA

PERF_DATA from perf record --call-graph dwarf of the exchange alone, e.g.
  BENCH_CODEC_FLOATS=1048576 BENCH_PIPE_ONLY=stream BENCH_ONLY=codecs \\
  BENCH_CODECS=int8 BENCH_TRIALS=1 perf record -F 1000 \\
  --call-graph dwarf,16384 -o perf.data build/bench_gossip build/bench-certs 1024

Counts the samples of the exchange's four threads (tests/bench_codec.c
pipe_producer, pipe_consumer, the two loops; setup left out) by what the
leaf frame does, and prints each bucket's share of them. Page faults (the
first exchange touching the copies) are counted apart and left out of the
shares.
"""
import collections
import subprocess
import sys


def frames_of(sample):
    lines = [l.strip() for l in sample.strip().split('\n') if l.strip()]
    # first line: comm tid; then "ip sym+off (dso)" frames, leaf first
    return [l.split(' ', 1)[1] if ' ' in l else l for l in lines[1:]]


def thread_of(stack):
    if 'pipe_producer' in stack:
        return 'sender training thread (encode)'
    if 'pipe_consumer' in stack:
        return 'receiver training thread (apply)'
    if 'pipe_side_main' in stack or 'uv_run' in stack:
        return 'the two loops (seal, send; read, open, check)'
    return None


HELPERS = ('fold512', 'fold128', 'k512', 'tail_mask')


def bucket_of(frames, stack, thread):
    # an inlined intrinsic or helper (_mm512_..., the CRC's folds, the int8
    # kernels' tail mask) counts as the function it is in
    while len(frames) > 1 and '(inlined)' in frames[0] and (
            frames[0].startswith('_mm') or frames[0].split(' ')[0] in HELPERS):
        frames = frames[1:]
    leaf = frames[0]
    kernel = 'kernel' in leaf or '[unknown]' in leaf
    if kernel and ('page_fault' in stack or 'handle_mm_fault' in stack):
        return None  # first touch of a buffer
    if any(k in leaf for k in ('maxabs_bits', 'int8_enc', 'dense_encode', 'encode_part',
                               'blocked_encode')):
        return 'int8 encode: max |x - ref|, quantize, ref update'
    if any(k in leaf for k in ('int8_dec', 'dense_decode')):
        return 'int8 apply to the copy'
    if any(k in leaf for k in ('crc_hw', 'crc_clmul', '_mm_crc32', 'crc32c')):
        return 'CRC32C of the copy (%s)' % ('sender' if 'encode' in thread else 'receiver')
    if any(k in leaf for k in ('has_minus128', 'check_scales', 'dense_check')) or (
            'memchr' in leaf and 'dense_check' in stack):
        return 'check_body (int8 codes, scales)'
    if 'memmove' in leaf or 'memcpy' in leaf:
        if 'bio_write' in stack:
            return 'memcpy: ciphertext into the write pool (bio_write)'
        if 'bio_read' in stack:
            return 'memcpy: ciphertext out of the read buffer (bio_read)'
        if 'pipe_on_vector' in stack:
            return 'memcpy: chunk into a staging buffer'
        return 'memcpy: other (SSL_read: plaintext out of the record)'
    if 'libcrypto' in leaf:
        return 'AES-128-GCM seal and open (libcrypto)'
    if 'libssl' in leaf:
        return 'TLS records (libssl)'
    if kernel:
        if 'copy_to_iter' in leaf or 'copy_from_iter' in leaf:
            return 'kernel: socket copies (send, recv)'
        if any(k in stack for k in ('futex', 'schedule', 'wake_up', 'finish_task_switch',
                                    'epoll')):
            return 'kernel: wakes, futex, epoll, scheduling'
        return 'kernel: TCP/IP, syscalls, other'
    if 'libuv' in leaf:
        return 'libuv'
    return 'other user code (libc, pthread, the bench)'


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = subprocess.run(['perf', 'script', '-i', sys.argv[1], '-F', 'comm,tid,ip,sym,dso'],
                         capture_output=True, text=True, check=True).stdout
    buckets, threads = collections.Counter(), collections.Counter()
    faults = 0
    for sample in out.split('\n\n'):
        frames = frames_of(sample)
        if not frames:
            continue
        stack = ' '.join(frames)
        thread = thread_of(stack)
        if not thread:
            continue
        b = bucket_of(frames, stack, thread)
        if b is None:
            faults += 1
            continue
        buckets[b] += 1
        threads[thread] += 1
    total = sum(buckets.values())
    if not total:
        sys.exit('no samples of the exchange in %s' % sys.argv[1])
    print('%d samples of the exchange (%d page faults left out)' % (total, faults))
    for k, v in threads.most_common():
        print('  thread %-50s %5.1f %%' % (k, 100.0 * v / total))
    for k, v in buckets.most_common():
        print('  %-57s %5.1f %%' % (k, 100.0 * v / total))


if __name__ == '__main__':
    main()
