"""Deterministic generator of realistic synthetic GPU Kineto traces.

The output imitates what PyTorch (2024-2026) writes with
``torch.profiler.profile(activities=[CPU, CUDA], record_shapes=True,
profile_memory=True)`` around a data-parallel training loop on an
NVIDIA A100-SXM4-80GB: Kineto's own JSON layout and whitespace, fractional
microsecond timestamps with exactly three decimals (relative to
``baseTimeNanoseconds``), ``traceEvents`` followed by more top-level keys.

Each profiler step is one training iteration of a small hybrid conv-stem
vision transformer: data loading, host-to-device copies, a forward pass on
the main thread (nested ``cpu_op`` trees with shapes, dtypes and concrete
inputs, ``python_function`` module scopes, ``[memory]`` instant events), a
backward pass on the autograd thread (``autograd::engine::evaluate_function``
trees) with DDP gradient all-reduces (``record_param_comms`` ->
``nccl:all_reduce`` -> NCCL kernel on stream 20), a fused AdamW step and an
occasional ``loss.item()`` that synchronizes the stream.  Kernels run on
streams 7 and 20; each is linked to its launching runtime/driver call by
``correlation`` and by an ``ac2g`` flow pair.

Invariants (checked by tests/test_synth.py): durations are positive,
``X`` events on a CPU thread nest properly, every device event starts after
its launch call, events on one stream never overlap, correlation ids are
unique, and each runtime call's ``External id`` names a ``cpu_op`` that
encloses it.  The output is a pure function of the arguments
(``random.Random(seed)``, no clock), so the same arguments give the same
bytes; a ``.json.gz`` file holds exactly the bytes of the ``.json`` file.

Format notes for readers of the output:

* ``ts``/``dur`` are microseconds with exactly three decimals; absolute time
  is ``baseTimeNanoseconds + ts * 1000`` ns.  ``baseTimeNanoseconds``,
  ``traceName`` and ``displayTimeUnit`` come *after* ``traceEvents``.
* Metadata (``ph: M``) events come at the end of ``traceEvents``, followed by
  the ``Trace`` span (pid "Spans"), an ``Iteration Start`` instant (pid
  "Traces") and ``Record Window End`` (pid "" and tid "").
* CPU pid/tids are ints; the GPU pid is the device index and the tid of a
  device event is its stream.  The backward pass runs on a second CPU thread.
* A runtime call's ``External id`` is that of an enclosing ``cpu_op``, not
  always the innermost event: NCCL launches sit inside the ``nccl:all_reduce``
  user_annotation but carry the id of ``record_param_comms``.
* ``cudaStreamSynchronize`` (inside ``aten::_local_scalar_dense``) has an
  ``External id`` but no flow; ``cudaDeviceSynchronize`` has neither.
  Other runtime calls without device work (cudaEventRecord,
  cudaStreamWaitEvent) have no flow either.
* ``ac2g`` flows: ``ph: s`` on the launch (CPU pid/tid, same ts), ``ph: f``
  with ``bp: e`` on the device event; ``id`` equals ``correlation``.

Public API: :func:`generate`, :func:`generate_ranks`, :func:`generate_job`
(the ranks of one job on one clock, meeting at every collective, one rank
optionally late: ``job``),
:func:`approx_events_for_bytes`; ``python -m duckprof.synth OUT --events N``.

Modules: ``format`` (Kineto's JSON layout, event templates, the file header),
``kernels`` (kernel names), ``ops`` (operator args, trees and their
building blocks), ``model`` (the training step's operator trees), ``sim``
(the clock that runs them and emits events), ``writer`` (``generate``).
"""

from __future__ import annotations

from .job import generate_job
from .writer import BYTES_PER_EVENT, approx_events_for_bytes, default_blocks, generate, generate_ranks

__all__ = ["generate", "generate_ranks", "generate_job", "approx_events_for_bytes", "default_blocks",
           "BYTES_PER_EVENT"]
