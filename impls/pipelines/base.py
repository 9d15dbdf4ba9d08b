"""What every training pipeline shares: configuration, the epoch loop, the DDP step, evaluation,
memory accounting.

A pipeline runs on every rank of the process group (one process per GPU, or CPU ranks under
gloo). A subclass decides where the graph and the features live (``build_stores``) and how a
mini-batch is made: ``sample(seeds) -> blocks`` (the :class:`impls.core.blocks.Block` list of
one mini-batch, outermost hop first) and ``gather(blocks) -> x`` (features of
``blocks[0].src_ids``, on the rank's device). Loader-driven pipelines (PyG, DGL: worker
processes sample ahead of the training loop) override ``iterate(batches, training)`` instead of
``sample``. Everything else lives here, so every pipeline is timed and trained the same way.

The epoch (``train_epoch``)
---------------------------
Every rank shuffles the labelled training nodes with the generator of (seed, epoch), takes its
own equal share ``perm[r * n // W : (r + 1) * n // W]`` (the ``n mod W`` nodes left over in that
epoch's order are skipped) and cuts it into batches of ``batch_size`` (the last one may be
smaller). Every rank therefore runs the same number of batches, which keeps the
DistributedDataParallel all-reduces in lockstep. ``max_batches_per_epoch`` caps an epoch for
quick runs (the stats say how many batches a full epoch has, so a capped epoch can be
extrapolated). A pipeline whose loader builds batches in waves (``cap_unit``: W worker processes
each build a whole batch, so W batches come at once) rounds a cap up to whole waves: a partial
wave costs a whole one, and its per-batch time would overstate the epoch (1xH200, products,
pyg_host with 8 workers: a 2-batch cap extrapolated to 1407 s, 8 and 16 batches to 453 and
481 s). Per batch: ``sample`` -> ``gather`` + the labels of the seeds -> ``train_step`` (model
under DDP, Adam, cross-entropy).

Timing: with ``breakdown=True`` (the default) the device is synchronized between the stages so
sample / gather / train seconds are honest; ``breakdown=False`` puts no synchronization inside
the epoch (only before and after it), so the epoch time is what an un-instrumented training
loop takes, and the stage times are not measured (``None``). Both modes synchronize at the
start and end of the epoch. For loader-driven pipelines the sample time is the time the
training loop waits for the next mini-batch (plus moving its structure to the device). A rank's
train stage contains DDP's gradient all-reduce, which waits for the slowest rank to get there, so
without ``stage_barrier`` the peers' slower sampling or gathering is counted as their training;
``stage_barrier=True`` (with breakdown) puts a barrier of all ranks before each clock reading, so
every stage starts together on every rank and its time is its own slowest rank's
(``extra["stage_s_slowest_rank"]`` gives the per-stage maximum either way).

Prefetch (pipelines that set ``prefetch_batches``; option ``prefetch``: batches ahead, default 1
on GPUs and 0 on CPU ranks, where only the thread remains; ``prefetch_on_side_stream``): in an epoch
without breakdown, a helper thread samples and gathers mini-batch i+1 on a side CUDA stream
while the training thread trains mini-batch i, so the samplers' host-side work (kernel launches,
the size read-backs between hops) no longer leaves the GPU idle. The batches, their order and
every random draw are those of the sequential loop; the training stream waits on an event of
the side stream before using a batch, and the batch's tensors are marked as used by the
training stream (``record_stream``) so the allocator cannot hand their memory to the next batch
early. Synced (breakdown) epochs stay sequential: their stage times are what Fig. 9 shows.

Cross-rank values: ``EpochStats.epoch_s`` is the slowest rank's epoch, the stage times and the
loss are means over ranks, sampled edges and gathered bytes are sums over ranks (per epoch).

Memory (``memory()``)
---------------------
Bytes on this rank's device by category: ``graph_structure`` and ``node_features`` (this rank's
part of the stores, from their sizes; zero on the device for host-memory pipelines), ``cache``
(device caches; none of the pipelines here has one), ``labels``, and ``training``: on CUDA
``torch.cuda.max_memory_allocated`` during the training epochs minus what was allocated before
the model was built (so it holds the model, gradients, optimizer state, DDP buckets, sampled
blocks, gathered features and activations, and none of the stores, whichever allocator holds
them); on CPU ranks parameters + gradients + Adam state + the largest mini-batch input (blocks
and features; activations are not tracked on the host). ``total`` is the sum of the categories.
``memory_report()`` adds what the device reports as used (nvidia-smi's view, CUDA context and
NCCL buffers included) and where each store lives.
"""

from __future__ import annotations

import queue
import threading
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Callable, Iterator

import torch
import torch.distributed as dist
import torch.nn.functional as F

from harness.errors import HarnessError, SkipPoint
from harness.timing import Phases
from impls.core.blocks import Block

from .profiling import epoch_profile

MEMORY_CATEGORIES = ("graph_structure", "node_features", "cache", "labels", "training")
SPLITS = ("train", "val", "test")


@dataclass
class PipelineConfig:
    """What to train and how. ``graph`` (a loaded :class:`harness.datasets.Graph`) overrides
    ``dataset``/``scale``; ``backend`` None = the pipeline's default (``pyg`` for pyg_host,
    ``native`` otherwise); ``options`` holds pipeline-specific settings (each module lists its
    own, e.g. ``num_workers``, ``sampler``, ``mode``)."""

    dataset: str = "ogbn-products"
    scale: float = 1.0
    graph: Any = None
    data_root: str | None = None
    model: str = "sage"                      # gcn | sage | gat | pinsage
    backend: str | None = None               # native | pyg
    num_layers: int = 3
    hidden: int = 256
    heads: int = 4
    fanouts: tuple[int, ...] = (30, 30, 30)  # fanouts[0] applies to the seeds
    batch_size: int = 512
    lr: float = 0.003
    dropout: float = 0.0
    seed: int = 0
    epochs: int = 1
    max_batches_per_epoch: int | None = None
    eval_batch_size: int = 1024
    eval_max_nodes: int | None = None        # cap on labelled nodes evaluated per split
    breakdown: bool = True                   # synchronize between stages (see module doc)
    stage_barrier: bool = False              # with breakdown: all ranks start each stage together
    memory_budget_bytes: int | None = None   # for pipelines that place data under a budget
    options: dict = field(default_factory=dict)

    def __post_init__(self):
        self.fanouts = tuple(int(f) for f in self.fanouts)
        if len(self.fanouts) != self.num_layers:
            raise HarnessError(f"{self.num_layers} layers need {self.num_layers} fanouts, got "
                               f"{list(self.fanouts)}")
        for name in ("batch_size", "eval_batch_size", "hidden", "num_layers", "heads"):
            if int(getattr(self, name)) < 1:
                raise HarnessError(f"{name} must be >= 1")


@dataclass
class EpochStats:
    epoch: int
    epoch_s: float                  # slowest rank
    sample_s: float | None          # mean over ranks; None without breakdown
    gather_s: float | None
    train_s: float | None
    batches: int                    # per rank (the same on every rank)
    batches_full: int               # per rank in an uncapped epoch
    loss: float                     # mean over batches and ranks
    sampled_edges: int              # all ranks
    gathered_bytes: int             # all ranks
    breakdown: bool
    extra: dict = field(default_factory=dict)

    @property
    def capped(self) -> bool:
        return self.batches < self.batches_full

    def full_epoch_s(self, value: float | None = None) -> float | None:
        """``value`` (default: the epoch time) scaled from the batches run to a full epoch."""
        value = self.epoch_s if value is None else value
        if value is None or self.batches == 0:
            return value
        return value * self.batches_full / self.batches


def rank_share(n: int, world: int, rank: int) -> tuple[int, int]:
    """[lo, hi) of rank's equal share of n items (the n mod world last ones are left out)."""
    per = n // world
    return rank * per, (rank + 1) * per


def epoch_batches(train_ids: torch.Tensor, world: int, rank: int, seed: int, epoch: int,
                  batch_size: int, max_batches: int | None = None) -> tuple[list[torch.Tensor], int]:
    """(this rank's batches of seeds for ``epoch``, batches of a full epoch): every rank gets
    the same number of batches (module doc)."""
    n = int(train_ids.numel())
    if n // world == 0:
        raise HarnessError(f"{n} labelled training nodes cannot be shared by {world} ranks")
    gen = torch.Generator().manual_seed(int(seed) * 1_000_003 + int(epoch) + 17)
    perm = torch.randperm(n, generator=gen)
    lo, hi = rank_share(n, world, rank)
    share = train_ids[perm[lo:hi]]
    batches = list(share.split(batch_size))
    full = len(batches)
    if max_batches is not None:
        batches = batches[:max_batches]
    return batches, full


def load_graph(rank, config: PipelineConfig):
    """The dataset on every rank: rank 0 prepares (generates and caches) a stand-in first, the
    others wait and then open the same cache (memory-mapped: one copy in the page cache)."""
    if config.graph is not None:
        return config.graph
    from harness import datasets
    from harness.ranks import load_on_ranks

    return load_on_ranks(rank, lambda: datasets.load(config.dataset, scale=config.scale, seed=config.seed,
                                                     data_root=config.data_root))


def copy_rows(dst: torch.Tensor, src: torch.Tensor, start: int, chunk_bytes: int = 64 << 20) -> None:
    """``dst[i] = src[start + i]`` in chunks (``src`` a host tensor, e.g. a memory map)."""
    rows = dst.shape[0]
    if rows == 0:
        return
    step = max(1, chunk_bytes // max(1, src[0].numel() * src.element_size()))
    for lo in range(0, rows, step):
        hi = min(rows, lo + step)
        dst[lo:hi].copy_(src[start + lo:start + hi])


def prefetch_on_side_stream(device: torch.device, prepare: Callable[[], Any], depth: int, name: str) -> Iterator:
    """Run ``prepare()`` (None when there is nothing left) in a helper thread, at most ``depth``
    results ahead of the consumer (the one being prepared included), and yield them in order.

    On GPUs the helper works on a side CUDA stream; before a result is yielded the consumer's
    stream waits on an event recorded after it, and every CUDA tensor in it is marked as used by
    the consumer's stream (``record_stream``), so the caching allocator does not hand its memory
    to a later batch while the consumer's kernels may still read it. The helper stops when the
    consumer does (exhausted, closed early or failed); its exceptions reach the consumer.
    """
    cuda = device.type == "cuda"
    side = torch.cuda.Stream(device) if cuda else None
    out: queue.Queue = queue.Queue()
    slots = threading.Semaphore(max(1, depth))   # results prepared and not yet taken, the running one included
    stop = threading.Event()
    end = object()

    def produce():
        try:
            if cuda:
                torch.cuda.set_device(device)
            # no wait on the consumer's stream: the stores were written before the epoch (synced),
            # and memory the consumer's stream frees never serves the side stream's allocations
            with torch.cuda.stream(side) if cuda else nullcontext():
                while True:
                    slots.acquire()
                    if stop.is_set():
                        return
                    item = prepare()
                    if item is None:
                        break
                    event = None
                    if cuda:
                        event = torch.cuda.Event()
                        event.record(side)
                    out.put((item, event))
            out.put(end)
        except BaseException as exc:          # handed to the consumer
            out.put(exc)

    worker = threading.Thread(target=produce, name=name, daemon=True)
    worker.start()
    try:
        while True:
            got = out.get()
            if got is end:
                break
            if isinstance(got, BaseException):
                raise got
            item, event = got
            slots.release()
            if event is not None:
                main = torch.cuda.current_stream(device)
                main.wait_event(event)
                for t in _tensors(item):
                    if t.is_cuda:
                        t.record_stream(main)
            yield item
    finally:
        stop.set()
        slots.release()                       # a helper waiting for a slot sees the stop
        worker.join()


def _tensors(obj) -> Iterator[torch.Tensor]:
    """Every tensor inside nested tuples, lists, dicts and dataclasses (a batch's Blocks), the
    attributes set on a dataclass instance beyond its fields included (a Block's ``edge_weight``)."""
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            yield from _tensors(item)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from _tensors(item)
    elif is_dataclass(obj) and not isinstance(obj, type):
        names = [f.name for f in fields(obj)]
        names += [k for k in vars(obj) if k not in names]
        for name in names:
            yield from _tensors(getattr(obj, name))


def tensor_bytes(*tensors) -> int:
    return sum(int(t.numel()) * t.element_size() for t in tensors if isinstance(t, torch.Tensor))


def block_bytes(blocks: list[Block]) -> int:
    return sum(tensor_bytes(*_tensors(b)) for b in blocks)


def device_used_parts(device: torch.device, used: int) -> dict:
    """What the device's used memory (nvidia-smi's view) is made of, in bytes: torch's caching
    allocator (``allocated`` now, ``reserved``: held from the driver, cached free blocks included,
    and their peaks), this process's own use as NVML counts it (its CUDA context, NCCL's buffers,
    CuPy's pool and the stores allocated outside torch's allocator besides torch's reserve), and the
    other processes' use of this device (peer ranks' contexts on it, for one). ``own_bytes`` is None
    where NVML does not list this process (another pid namespace): then the other processes are
    all the listed ones but the largest."""
    from impls.core.nvml import device_processes

    parts = {"used": used, "allocated": int(torch.cuda.memory_allocated(device)),
             "reserved": int(torch.cuda.memory_reserved(device)),
             "max_allocated": int(torch.cuda.max_memory_allocated(device)),
             "max_reserved": int(torch.cuda.max_memory_reserved(device))}
    procs = device_processes(device)
    if procs is not None:
        own = [p["used_bytes"] for p in procs if p["own"]]
        others = [p["used_bytes"] for p in procs if not p["own"]] if own else [p["used_bytes"] for p in procs[1:]]
        parts.update(processes=len(procs), own_bytes=own[0] if own else None, others_bytes=sum(others),
                     other_processes=len(others))
    return parts


class RankFailed(BaseException):
    """A training point failed on this rank: not an Exception, so the runner does not turn it into a
    row and go on to the next point's collectives while the other ranks are still in this one."""


@contextmanager
def collective_lifetime(pipe, label: str, rank):
    """Run a pipeline's collective work and close it (collective too) on every way out but one.

    A failure on one rank leaves the others inside a collective: closing the stores would pair with
    the wrong call and hang until the group's timeout. So on an exception the pipeline stays open
    and the rank ends with :class:`RankFailed` (the launcher then stops the others and the runner
    records the points as errors). ``SkipPoint`` is collective (every rank skips together) and
    closes normally."""
    failed = False
    try:
        yield pipe
    except SkipPoint:
        raise
    except Exception as exc:
        failed = True
        raise RankFailed(f"{label} failed on rank {rank.rank}: {type(exc).__name__}: {exc}") from exc
    finally:
        if not failed:
            pipe.close()


class Pipeline:
    """Base class; subclasses implement ``build_stores``, ``sample`` (or ``iterate``),
    ``gather`` and ``store_bytes``, and may extend ``describe`` and ``close``."""

    name = ""
    default_backend = "native"
    prefetch_batches = False      # the epoch loop prepares whole batches ahead ("Prefetch" in the module doc)

    def __init__(self, rank, config: PipelineConfig):
        self.rank = rank
        self.config = config
        self.device = rank.torch_device()
        self.backend = config.backend or self.default_backend
        self.world, self.me = rank.world_size, rank.rank
        # set by tests: called after every training step with a dict describing it
        self.step_hook: Callable[[dict], None] | None = None
        self.graph = None
        self.model = None
        self.ddp = None
        self.optimizer = None
        self._alloc_base = 0
        self._train_peak = 0
        self._batch_peak = 0
        self._setup_done = False

    # --- options ---------------------------------------------------------------------------
    def option(self, name: str, default=None):
        return self.config.options.get(name, default)

    # --- lifecycle -------------------------------------------------------------------------
    def setup(self) -> None:
        """Collective: load the graph, build the stores, the labels and the model under DDP."""
        self.graph = load_graph(self.rank, self.config)
        if self.device.type == "cuda":
            torch.cuda.empty_cache()           # a stand-in generated on this GPU leaves cached blocks
        g = self.graph
        if g.labels is None or g.labels.ndim != 1:
            raise SkipPoint(f"{g.name}: training needs single-label classes")
        if g.features is None:
            raise SkipPoint(f"{g.name}: training needs node features")
        self.num_nodes = int(g.num_nodes)
        self.num_classes = int(g.num_classes)
        self.feature_dim = int(g.feature_dim)
        labels = torch.from_numpy(g.labels)
        self._split_ids = {}
        for split, idx in (("train", g.train_idx), ("val", g.val_idx), ("test", g.test_idx)):
            ids = torch.from_numpy(idx.astype("int64", copy=False))
            self._split_ids[split] = ids[labels[ids] >= 0] if ids.numel() else ids
        self.build_stores()
        self.labels = labels.to(self.device)
        self._sync()
        if self.device.type == "cuda":
            self._alloc_base = torch.cuda.memory_allocated(self.device)
        self.build_model()
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)
        self._barrier()
        self._setup_done = True

    def build_stores(self) -> None:
        raise NotImplementedError

    def build_model(self) -> None:
        from impls import models

        c = self.config
        torch.manual_seed(c.seed)
        model_options = {k: v for k, v in c.options.items()
                         if k in ("norm", "attn_dropout", "negative_slope", "head_dim", "activation",
                                  "impl", "backward", "sddmm", "chunk_elems")}
        self.model = models.build(c.model, self.feature_dim, c.hidden, self.num_classes, c.num_layers,
                                  backend=self.backend, heads=c.heads, dropout=c.dropout,
                                  **model_options).to(self.device)
        if dist.is_available() and dist.is_initialized():
            from torch.nn.parallel import DistributedDataParallel

            # device_ids=None: inputs (Block lists) are already on the device and pass untouched
            self.ddp = DistributedDataParallel(self.model, device_ids=None, gradient_as_bucket_view=True)
        else:
            self.ddp = self.model
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=c.lr)

    def close(self) -> None:
        """Collective: subclasses close their stores (and call this)."""
        self.model = self.ddp = self.optimizer = None
        self.step_hook = None
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            torch.cuda.empty_cache()

    # --- mini-batches ----------------------------------------------------------------------
    def sample(self, seeds: torch.Tensor) -> list[Block]:
        raise NotImplementedError

    def gather(self, blocks: list[Block]) -> torch.Tensor:
        raise NotImplementedError

    def iterate(self, batches: list[torch.Tensor], training: bool) -> Iterator[tuple[torch.Tensor, list[Block]]]:
        """(seeds, blocks) of every batch, in order. Default: ``sample`` each batch on demand."""
        for seeds in batches:
            seeds = seeds.to(self.device)
            yield seeds, self.sample(seeds)

    def prefetch_depth(self, cpu_default: int = 0) -> int:
        """Option ``prefetch``: batches prepared ahead by a helper thread (default 1 on GPUs,
        ``cpu_default`` on CPU ranks). What is prepared ahead depends on the pipeline: whole batches
        in the epoch loop (``prefetch_batches``), or only the sampling (the tiered pipelines' ``iterate``)."""
        value = self.option("prefetch", None)
        if value is None:
            return 1 if self.device.type == "cuda" else cpu_default
        if not str(value).isdigit():
            raise HarnessError(f"{self.name}: option prefetch must be 0 or 1 (or more batches ahead), "
                               f"not {value!r}")
        return int(value)

    def prefetch_enabled(self) -> bool:
        """Whether free-running epochs prepare whole batches ahead (sampled and gathered)."""
        depth = self.prefetch_depth()
        return self.prefetch_batches and depth > 0

    def _sequential_batches(self, batches):
        for seeds, blocks in self.iterate(batches, training=True):
            yield seeds, blocks, None, None

    def _prefetched_batches(self, batches):
        """(seeds, blocks, x, y), later batches sampled and gathered ahead on a side stream."""
        source = iter(self.iterate(batches, training=True))

        def prepare():
            item = next(source, None)
            if item is None:
                return None
            seeds, blocks = item
            return seeds, blocks, self.features(blocks), self.labels_of(seeds)

        yield from prefetch_on_side_stream(self.device, prepare, self.prefetch_depth(), f"{self.name}-prefetch")

    def labels_of(self, seeds: torch.Tensor) -> torch.Tensor:
        return self.labels[seeds.to(self.labels.device)]

    def features(self, blocks: list[Block]) -> torch.Tensor:
        x = self.gather(blocks)
        return x if x.dtype == torch.float32 else x.float()

    def split_ids(self, split: str) -> torch.Tensor:
        if split not in SPLITS:
            raise HarnessError(f"split must be one of {', '.join(SPLITS)}, not '{split}'")
        return self._split_ids[split]

    def epoch_batches(self, epoch: int, max_batches: int | None = None) -> tuple[list[torch.Tensor], int]:
        return epoch_batches(self.split_ids("train"), self.world, self.me, self.config.seed, epoch,
                             self.config.batch_size, max_batches)

    # --- training --------------------------------------------------------------------------
    def train_step(self, blocks: list[Block], x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        self.optimizer.zero_grad(set_to_none=True)
        logits = self.ddp(blocks, x)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        self.optimizer.step()
        return loss.detach()

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def cap_unit(self) -> int:
        """Batches the loader produces together (its worker processes); a capped epoch runs whole
        multiples of it. 1 for pipelines that sample batch by batch."""
        return 1

    def _barrier(self) -> None:
        if dist.is_available() and dist.is_initialized():
            dist.barrier()

    def train_epoch(self, epoch: int, *, breakdown: bool | None = None,
                    max_batches: int | None = None) -> EpochStats:
        """One epoch on every rank (collective); see the module doc for timing and reductions.

        With ``HARNESS_PROFILE_DIR`` set, rank 0 runs epoch ``HARNESS_PROFILE_EPOCH`` (default 1,
        the first free-running one in the training experiments) under ``torch.profiler`` and writes
        what the GPU idles on (:func:`impls.pipelines.profiling.epoch_profile`); the epoch's own
        times then include the profiler's overhead, so a profiled run is for diagnosis only."""
        with epoch_profile(self, epoch, breakdown):
            return self._train_epoch(epoch, breakdown=breakdown, max_batches=max_batches)

    def _train_epoch(self, epoch: int, *, breakdown: bool | None = None,
                     max_batches: int | None = None) -> EpochStats:
        if not self._setup_done:
            raise HarnessError("call setup() before train_epoch()")
        breakdown = self.config.breakdown if breakdown is None else bool(breakdown)
        caps = [c for c in (max_batches, self.config.max_batches_per_epoch) if c is not None]
        cap = None
        if caps:
            unit = max(1, int(self.cap_unit()))
            cap = -(-min(caps) // unit) * unit            # whole waves of the loader
        batches, full = self.epoch_batches(epoch, cap)
        self.model.train()
        sync = self._sync
        # stage times: the device synchronized (and with stage_barrier every rank met) before each
        # clock reading; free-running epochs read the clock alone
        phases = Phases(("sample", "gather", "train"), sync=sync if breakdown else None,
                        barrier=self._barrier if breakdown and self.config.stage_barrier else None)
        loss_sum = torch.zeros((), dtype=torch.float32, device=self.device)
        edges = nbytes = done = 0
        sync()
        self._barrier()
        phases.start()
        prefetch = not breakdown and self.prefetch_enabled()
        source = self._prefetched_batches(batches) if prefetch else self._sequential_batches(batches)
        for seeds, blocks, x, y in source:
            phases.lap("sample")
            if x is None:
                x = self.features(blocks)
                y = self.labels_of(seeds)
            phases.lap("gather")
            loss = self.train_step(blocks, x, y)
            phases.lap("train")
            loss_sum += loss
            edges += sum(b.num_edges for b in blocks)
            nbytes += int(x.numel()) * x.element_size()
            self._batch_peak = max(self._batch_peak, block_bytes(blocks) + tensor_bytes(x, y))
            if self.step_hook is not None:
                self.step_hook({"epoch": epoch, "batch": done, "seeds": seeds, "blocks": blocks, "x": x,
                                "y": y, "loss": loss})
                phases.skip()
            done += 1
        sync()
        epoch_s = phases.elapsed()
        sample_s, gather_s, train_s = (phases.seconds[k] for k in ("sample", "gather", "train"))
        if done != len(batches):
            raise RuntimeError(f"{self.name}: {done} mini-batches came back for {len(batches)} planned")
        self._last_epoch_batches = done
        if self.device.type == "cuda":
            self._train_peak = max(self._train_peak, torch.cuda.max_memory_allocated(self.device))
        mine = torch.tensor([epoch_s, -epoch_s, sample_s, gather_s, train_s,
                             float(loss_sum) / max(done, 1), float(edges), float(nbytes)],
                            dtype=torch.float64, device=self.device)
        summed = mine.clone()
        # min of (end-start, -(end-start)) = (fastest rank, -slowest); max of the stages: the slowest
        extremes = torch.cat([mine[:2], -mine[2:5]])
        if dist.is_available() and dist.is_initialized():
            dist.all_reduce(summed)
            dist.all_reduce(extremes, op=dist.ReduceOp.MIN)
        w = self.world
        stage = (lambda v: float(v) / w) if breakdown else (lambda v: None)
        return EpochStats(
            epoch=epoch, epoch_s=-float(extremes[1]), sample_s=stage(summed[2]), gather_s=stage(summed[3]),
            train_s=stage(summed[4]), batches=done, batches_full=full, loss=float(summed[5]) / w,
            sampled_edges=int(summed[6]), gathered_bytes=int(summed[7]), breakdown=breakdown,
            extra={"epoch_s_fastest_rank": float(extremes[0]),
                   **({"stage_s_slowest_rank": {k: -float(v) for k, v in zip(("sample", "gather", "train"),
                                                                            extremes[2:5])}}
                      if breakdown else {})})

    # --- evaluation ------------------------------------------------------------------------
    @torch.no_grad()
    def evaluate(self, split: str = "val", max_nodes: int | None = None) -> float:
        """Accuracy on (a fixed subset of at most ``max_nodes`` of) the split's labelled nodes,
        each rank classifying every W-th of them with the same sampler as training; all-reduced.
        Collective only through the final all-reduce."""
        ids = self.split_ids(split)
        cap = max_nodes if max_nodes is not None else self.config.eval_max_nodes
        if cap is not None and ids.numel() > cap:
            gen = torch.Generator().manual_seed(self.config.seed * 7 + SPLITS.index(split))
            ids = ids[torch.randperm(ids.numel(), generator=gen)[:cap]]
        mine = ids[self.me::self.world]
        batches = list(mine.split(self.config.eval_batch_size)) if mine.numel() else []
        model = self.model
        model.eval()
        counts = torch.zeros(2, dtype=torch.float64, device=self.device)
        try:
            for seeds, blocks in self.iterate(batches, training=False):
                x = self.features(blocks)
                y = self.labels_of(seeds)
                pred = model(blocks, x).argmax(dim=1)
                counts[0] += (pred == y).sum()
                counts[1] += y.numel()
        finally:
            model.train()
        if dist.is_available() and dist.is_initialized():
            dist.all_reduce(counts)
        return float(counts[0] / counts[1]) if float(counts[1]) else float("nan")

    # --- memory ----------------------------------------------------------------------------
    def store_bytes(self) -> dict[str, int]:
        """This rank's device bytes of ``graph_structure``, ``node_features`` and ``cache``."""
        raise NotImplementedError

    def store_locations(self) -> dict[str, str]:
        """Where each store lives (for reports)."""
        return {}

    def memory(self) -> dict[str, int]:
        """Bytes per category on this rank's device, plus ``total`` (their sum); module doc."""
        stores = self.store_bytes()
        out = {k: int(stores.get(k, 0)) for k in ("graph_structure", "node_features", "cache")}
        out["labels"] = tensor_bytes(self.labels) if self.labels.device == self.device else 0
        if self.device.type == "cuda":
            peak = max(self._train_peak, torch.cuda.max_memory_allocated(self.device))
            out["training"] = max(0, peak - self._alloc_base)
        else:
            params = [p for p in self.model.parameters()] if self.model is not None else []
            state = 0
            if self.optimizer is not None:
                for s in self.optimizer.state.values():
                    state += tensor_bytes(*[v for v in s.values() if isinstance(v, torch.Tensor)])
            out["training"] = 2 * tensor_bytes(*params) + state + self._batch_peak
        out["total"] = sum(out[k] for k in MEMORY_CATEGORIES)
        return out

    def memory_report(self) -> dict:
        report = {"bytes": self.memory(), "locations": self.store_locations()}
        if self.device.type == "cuda":
            free, total = torch.cuda.mem_get_info(self.device)
            report["device_used_bytes"] = int(total - free)
            report["device_total_bytes"] = int(total)
            report["training_measure"] = "torch.cuda.max_memory_allocated during training - allocated before the model"
            report["device_used_parts"] = device_used_parts(self.device, int(total - free))
        else:
            report["training_measure"] = "parameters + gradients + Adam state + largest mini-batch input (host)"
        return report

    # --- description -----------------------------------------------------------------------
    def describe(self) -> dict[str, str]:
        """Which component does what (shown in reports)."""
        out = {"model": f"{self.config.model} ({self.backend} layers) under DistributedDataParallel, Adam"}
        if self.prefetch_enabled():
            out["loop"] = ("free-running epochs: mini-batch i+1 sampled and gathered on a side CUDA stream "
                           "(helper thread) while mini-batch i trains; synced epochs sequential")
        return out
