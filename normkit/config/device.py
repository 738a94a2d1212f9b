"""What the heuristics know of a GPU: a `Device` record, read once per device from torch's properties
(`_runtime.target`), and the nominal records of the GPUs normkit is compile-checked for (docs/design.md#heuristics).

The record picks the table set (`Device.ladder`): the H200's measured tables on sm_90, the generic ladder
(config/generic.py) everywhere else; NORMKIT_ARCH=generic or =sm90 forces one.
"""

from dataclasses import dataclass, replace
from typing import Dict

from .shapes import Problem
from .tile import TileConfig, cdiv, next_power_of_2

LADDERS = ("sm90", "generic")


@dataclass(frozen=True)
class Device:
    """One GPU's limits as the heuristics read them."""

    arch: str  # "sm90", "sm80", "gfx942", ...: compute capability or AMD target
    multiprocessors: int  # SMs (NVIDIA) or CUs (AMD)
    shared_per_block: int  # bytes of shared memory (LDS) one program may ask for
    shared_per_multiprocessor: int
    registers_per_multiprocessor: int  # 32-bit registers
    threads_per_multiprocessor: int
    warp_size: int  # 32 (NVIDIA) or 64 (AMD CDNA wavefronts)
    l2_bytes: int
    threads_per_block: int = 1024
    forced_ladder: str = ""  # NORMKIT_ARCH: "sm90" or "generic"; "" chooses by arch

    def __post_init__(self):
        if self.forced_ladder not in ("",) + LADDERS:
            raise ValueError(f"NORMKIT_ARCH names a table set, one of {', '.join(LADDERS)}, got {self.forced_ladder!r}")

    @property
    def vendor(self) -> str:
        return "amd" if self.arch.startswith("gfx") else "nvidia"

    @property
    def ladder(self) -> str:
        """The table set the heuristics read: the H200's on sm_90 (H100, H200, H20), else the generic ladder."""
        return self.forced_ladder or ("sm90" if self.arch == "sm90" else "generic")

    @property
    def max_warps(self) -> int:
        return self.threads_per_block // self.warp_size

    def resident(self, registers: int, num_warps: int, shared_bytes: int) -> int:
        """Programs of a compiled kernel one multiprocessor holds at once. NVIDIA: CUDA's occupancy rules
        (config.resident_programs). AMD CDNA: a CU's 4 SIMDs hold ⌊512 / VGPRs⌋ wavefronts each (VGPRs
        allocated in 8s, at most 8 a SIMD), its LDS ⌊LDS / shared⌋ programs."""
        from .grid import resident_programs

        if self.vendor == "nvidia":
            return resident_programs(registers, num_warps, shared_bytes, self.registers_per_multiprocessor,
                                     self.threads_per_multiprocessor, self.shared_per_multiprocessor)
        waves = 4 * min(8, 512 // max(8, cdiv(registers, 8) * 8))
        by_lds = self.shared_per_multiprocessor // shared_bytes if shared_bytes else 32
        by_threads = self.threads_per_multiprocessor // (self.warp_size * num_warps)
        return max(0, min(waves // num_warps, by_lds, by_threads, 32))


def shared_bytes(config: TileConfig, p: Problem, backward: bool, warp_size: int = 32) -> int:
    """An upper bound of the shared memory (LDS) a compiled tile asks for (tools/compile_check.py --targets checks
    it against the compiled kernels): its staged loads — (stages − 1) row blocks of each tensor the row loop
    reads, the weight and bias taken 4-byte — and its scratch: the backward's a row block of float values (the
    dweight partial on its way to the store's layout); the forward's the row sums of every warp and, where x,
    y and the residual differ in width, a layout conversion of up to 8 of the widest elements a thread at a time;
    split parts also the portable spin wait's reduction (kernels/ptx.py), 8 bytes a word (up to 4) for each part
    of the row block on each warp, reused after the other scratch."""
    compute = 8 if p.x_bytes == 8 else 4
    stages = config.async_stages or config.column_stages
    if backward:
        element_bytes = 2 * p.x_bytes + (p.x_bytes if p.residual else 0)
    else:
        element_bytes = p.x_bytes + (p.residual_bytes if p.residual else 0)
        if config.split and not config.hold_weight:
            element_bytes += 2 * 4
    staged = max(stages - 1, 0) * config.block_m * config.block_n * element_bytes
    parts = max(8, next_power_of_2(cdiv(p.n, config.block_n)))  # 8: the SPLIT compile_targets compiles
    spin = 8 * 4 * parts * config.block_m * config.num_warps if config.split else 0
    if backward:
        return staged + max(config.block_m * config.block_n * compute, spin)
    mixed = p.y_bytes != p.x_bytes or (p.residual and p.residual_bytes != p.x_bytes)
    widest = max(p.x_bytes, p.y_bytes, p.residual_bytes if p.residual else 0)
    conversion = min(config.block_m * config.block_n, config.num_warps * warp_size * 8) * widest if mixed else 0
    return staged + max(4 * config.block_m * config.num_warps * compute + conversion, spin)


def from_properties(props, hip: bool, forced_ladder: str = "") -> Device:
    """The record of a GPU from `torch.cuda.get_device_properties` (ROCm builds: hip=True, where torch
    names the target in gcnArchName, e.g. "gfx942:sramecc+:xnack-"). Fields older torch builds lack take
    the sm_80 / sm_90 values."""
    if hip:
        arch = str(getattr(props, "gcnArchName", "gfx")).split(":")[0]
    else:
        arch = f"sm{props.major}{props.minor}"
    shared_per_block = getattr(props, "shared_memory_per_block_optin", 0) or getattr(props, "shared_memory_per_block",
                                                                                    49152)
    return Device(arch=arch, multiprocessors=props.multi_processor_count, shared_per_block=shared_per_block,
                  shared_per_multiprocessor=getattr(props, "shared_memory_per_multiprocessor", 233472),
                  registers_per_multiprocessor=getattr(props, "regs_per_multiprocessor", 65536),
                  threads_per_multiprocessor=getattr(props, "max_threads_per_multi_processor", 2048),
                  warp_size=getattr(props, "warp_size", 64 if hip else 32), l2_bytes=getattr(props, "L2_cache_size", 0),
                  threads_per_block=getattr(props, "max_threads_per_block", 1024), forced_ladder=forced_ladder)


def forced(device: Device, ladder: str) -> Device:
    """The record with its table set forced (NORMKIT_ARCH)."""
    return replace(device, forced_ladder=ladder)


# The GPUs normkit is compile-checked for (tools/compile_check.py --targets), as their vendors specify them.
KNOWN: Dict[str, Device] = {
    "sm80": Device("sm80", 108, 166912, 167936, 65536, 2048, 32, 40 << 20),  # A100
    "sm89": Device("sm89", 142, 101376, 102400, 65536, 1536, 32, 96 << 20),  # L40S (RTX 4090: 128 SMs, 72 MB)
    "sm90": Device("sm90", 132, 232448, 233472, 65536, 2048, 32, 50 << 20),  # H100 / H200
    "sm100": Device("sm100", 148, 232448, 233472, 65536, 2048, 32, 126 << 20),  # B200
    "gfx942": Device("gfx942", 304, 65536, 65536, 131072, 2048, 64, 4 << 20),  # MI300X (L2 a die; 256 MB LLC)
    "gfx950": Device("gfx950", 256, 163840, 163840, 131072, 2048, 64, 4 << 20),  # MI355X
}
