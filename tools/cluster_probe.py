"""Can a Triton 3.6 kernel exchange words through a thread-block cluster's distributed shared memory,
and how much faster is that round trip than the split parts' L2 one? (A probe: GPU, sm_90.)

The split parts' largest stall is the L2 round trip of the exchange (run ZZZZZP's source counters:
20-29 % of warp samples on the first read of a partner's word). Hopper's clusters let the CTAs of a
cluster store into each other's shared memory (`mapa` + `st.shared::cluster`), which Triton 3.6 does
not expose: no shared-memory allocation in the language, no cluster launch for a kernel compiled with
num_ctas = 1. This probe tries the way round both, with nothing but inline PTX and the launcher:

* shared memory: the kernel is launched with EXTRA bytes more dynamic shared memory than Triton's
  allocation asked for; the asm finds them at the end of the window (`global_smem` + the
  `%dynamic_smem_size` special register − EXTRA), past everything Triton's own code uses;
* the cluster: the compiled kernel's launcher is called with the packed metadata's num_ctas set to the
  cluster size (the launcher multiplies gridX by it and sets the cluster dimension attribute).

Two CTAs of a cluster ping-pong a tagged 64-bit word ROUNDS times — CTA 0 sends round r, CTA 1 waits
for it and answers, CTA 0 waits for the answer — through (mode `dsmem`) a word in the receiver's
shared memory, stored remotely (`st.relaxed.cluster.shared::cluster`) and polled locally, or (mode
`global`) a word in global memory, written with `atom.exch` and polled with `ld.relaxed.gpu` as
kernels/stats.py's exchange does. Thread 0 of each CTA plays (the others wait at the closing cluster
barrier: with every thread playing, a warp that raced ahead overwrote the word a slower warp of the
partner still waited for — run ZZZZZR's loaded `global` case hung so). It times its loop with %clock64; cycles / ROUNDS is one round
trip (two one-way latencies). With --background, every other SM streams a copy meanwhile (the split
parts' L2 is busy with the row blocks' loads: the loaded latency is the one they pay).

    python tools/cluster_probe.py                  # both modes, idle and loaded
    python tools/cluster_probe.py --compile-only   # the PTX through ptxas for sm_90 (no GPU needed)
"""

import argparse
import sys

import torch
import triton
import triton.language as tl

EXTRA = 64  # bytes of the probe's own shared memory (8-byte aligned words)

_CLUSTER_BARRIER = """
        barrier.cluster.arrive.release.aligned;
        barrier.cluster.wait.acquire.aligned;"""

# The ping-pong, after each mode's set-up, thread 0 of each CTA only: CTA 0 sends round r (SEND), both wait for their word to
# read r (RECEIVE into `word`), CTA 1 answers; the loop's %clock64 cycles into $0.
_PING = """
        mov.u64 round, 1;
        mov.u64 t0, %clock64;
        mov.u64 t1, t0;
        mov.u32 tid, %tid.x;
        setp.ne.u32 idle, tid, 0;
        @idle bra SKIP;
        LOOP:
        @first SEND;
        WAIT:
        RECEIVE;
        setp.ne.u64 late, word, round;
        @late bra WAIT;
        @!first SEND;
        add.u64 round, round, 1;
        setp.le.u64 more, round, $1;
        @more bra LOOP;
        mov.u64 t1, %clock64;
        SKIP:""" + _CLUSTER_BARRIER + """
        sub.u64 $0, t1, t0;
        }"""

_DSMEM = tl.constexpr("""{
        .reg .u32 base, size, peer, rank, other, tid;
        .reg .u64 round, word, t0, t1;
        .reg .pred first, late, more, idle;
        mov.u32 size, %dynamic_smem_size;
        mov.u32 base, global_smem;
        add.u32 base, base, size;
        sub.u32 base, base, """ + str(EXTRA) + """;
        st.shared.u64 [base], 0;""" + _CLUSTER_BARRIER + """
        mov.u32 rank, %cluster_ctarank;
        xor.b32 other, rank, 1;
        mapa.shared::cluster.u32 peer, base, other;
        setp.eq.u32 first, rank, 0;""" + _PING.replace("SEND", "st.relaxed.cluster.shared::cluster.u64 [peer], round")
                      .replace("RECEIVE", "ld.relaxed.cluster.shared.u64 word, [base]"))

_GLOBAL = tl.constexpr("""{
        .reg .u32 rank, other, tid;
        .reg .u64 round, word, t0, t1, mine, peer, scratch;
        .reg .pred first, late, more, idle;
        mov.u32 rank, %cluster_ctarank;
        xor.b32 other, rank, 1;
        mad.wide.u32 mine, rank, 8, $2;
        mad.wide.u32 peer, other, 8, $2;
        setp.eq.u32 first, rank, 0;""" + _CLUSTER_BARRIER + _PING.replace(
    "SEND", "atom.relaxed.gpu.global.exch.b64 scratch, [peer], round").replace(
    "RECEIVE", "ld.relaxed.gpu.global.u64 word, [mine]"))


@triton.jit
def ping_kernel(XCHG, OUT, rounds, MODE: tl.constexpr):
    """OUT[program] = %clock64 cycles of ROUNDS round trips with the program's cluster partner.
    XCHG: four zeroed int64 words — the two mode global exchanges through, then a cross-warp tl.sum's
    result a program, stored so that the kernel keeps Triton's shared memory (its `global_smem`)."""
    pid = tl.program_id(0)
    lanes = tl.arange(0, 128)
    tl.store(XCHG + 2 + pid, tl.sum(lanes.to(tl.int64) + pid, axis=0))  # a cross-warp reduction
    ones = tl.full([1], 0, tl.int64) + rounds
    if MODE == 0:
        cycles = tl.inline_asm_elementwise(_DSMEM, "=l,l", [ones], dtype=tl.int64, is_pure=False, pack=1)
    else:
        cycles = tl.inline_asm_elementwise(_GLOBAL, "=l,l,l", [ones, XCHG + tl.zeros([1], tl.int64)],
                                           dtype=tl.int64, is_pure=False, pack=1)
    tl.store(OUT + pid + tl.arange(0, 1), cycles)


MODES = {"dsmem": 0, "global": 1}


def compile_only() -> int:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    for mode, value in MODES.items():
        src = ASTSource(ping_kernel, {"XCHG": "*i64", "OUT": "*i64", "rounds": "i32", "MODE": "constexpr"},
                        {"MODE": value})
        compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
        ptx = compiled.asm["ptx"]
        print(f"{mode}: compiled for sm_90, {compiled.metadata.shared} B of Triton's shared memory, "
              f"global_smem declared: {'global_smem' in ptx}, cubin {len(compiled.asm['cubin'])} B")
    return 0


def launch_cluster(kernel, clusters: int, cluster: int, extra: int, *args) -> None:
    """The compiled kernel on clusters × cluster CTAs, clusters of `cluster`, with `extra` bytes of
    dynamic shared memory past its own (the launcher's packed metadata: num_warps, num_ctas, shared);
    args: every argument in signature order, constexprs included (what normkit/launch.py passes)."""
    num_warps, _, shared = kernel.packed_metadata
    stream = torch.cuda.current_stream().cuda_stream
    kernel.run(clusters, 1, 1, stream, kernel.function, (num_warps, cluster, shared + extra), None, None, None, *args)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=4000)
    p.add_argument("--compile-only", action="store_true")
    p.add_argument("--background", choices=["no", "yes", "both"], default="both",
                   help="a device-to-device copy running on the other SMs meanwhile")
    args = p.parse_args(argv)
    if args.rounds < 1:
        p.error(f"--rounds is a count of round trips, at least 1, got {args.rounds}")
    if args.compile_only:
        return compile_only()
    dev = torch.device("cuda")
    xchg = torch.zeros(4, dtype=torch.int64, device=dev)
    out = torch.zeros(2, dtype=torch.int64, device=dev)
    src = torch.empty(1 << 28, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    clock_hz = torch.cuda.get_device_properties(dev).clock_rate * 1e3 if hasattr(
        torch.cuda.get_device_properties(dev), "clock_rate") else None
    for mode, value in MODES.items():
        kernel = ping_kernel.warmup(xchg, out, args.rounds, MODE=value, grid=(1,), num_warps=4)
        for background in ([False, True] if args.background == "both" else [args.background == "yes"]):
            xchg.zero_()
            out.zero_()
            side = torch.cuda.Stream()
            launch_cluster(kernel, 1, 2, EXTRA, xchg, out, args.rounds, value)  # first: its two SMs taken
            if background:  # ~10 ms of copies on the other SMs, longer than the rounds
                with torch.cuda.stream(side):
                    for _ in range(64):
                        dst.copy_(src)
            torch.cuda.synchronize()
            cycles = out.tolist()
            per = max(cycles) / args.rounds
            print(f"{mode:6} {'loaded' if background else 'idle  '}: {per:7.1f} cycles a round trip "
                  f"(CTA cycles {cycles})" + (f", {per / clock_hz * 1e9:.0f} ns at the nominal clock" if clock_hz else ""),
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
