"""Where a Ray job's actors run: the CPUs each takes, the device it loads the model on, a GPU each
on a GPU job; what cannot be placed is refused in one line before any actor starts.

A module of its own, beside :mod:`.ray_engine` (which starts Ray and streams the job), because the
rule is plain arithmetic on the cluster's nodes (each node's CPUs and GPUs) and is read without Ray.
"""

from __future__ import annotations

from contextlens.core.backend import check_combination
from contextlens.core.choices import CPU_ONLY_PRECISIONS
from contextlens.core.devices import AUTO, CPU, check_device_choice, cuda_index, is_cuda
from contextlens.errors import DeviceError, InputError


def actor_placement(threads: int, device: str) -> dict[str, object]:
    """What each actor asks Ray for (``map_batches``' resources): ``threads`` CPUs, and one whole GPU
    when the job runs on ``device`` cuda (Ray then hands the actor its own device as its cuda:0,
    CUDA_VISIBLE_DEVICES). Ray Data places an actor pool SPREAD over the nodes by default
    (DataContext.scheduling_strategy; Ray 2.60 deprecates passing it to ``map_batches``)."""
    placement: dict[str, object] = {"num_cpus": threads}
    if is_cuda(device):
        placement["num_gpus"] = 1
    return placement


def actor_device(device: str, precision: str, actors: int, nodes: list[int], where: str = "the Ray cluster") -> str:
    """The device the actors load the model on, from the cluster's GPUs (``nodes``: each node's),
    not the driver's (a head node often has none): ``auto`` is a GPU per actor where the cluster
    has GPUs (int8 stays on the CPU), else the CPU; ``cuda`` asks for one; ``cpu`` takes none.
    Each actor is given one whole GPU, which it sees as its cuda:0, so ``cuda:N`` (N > 0) names
    nothing an actor can see. Refused in one line before any actor starts."""
    choice = check_device_choice(device)
    gpus = sum(nodes)
    if choice == CPU or (choice == AUTO and (precision in CPU_ONLY_PRECISIONS or gpus == 0)):
        return CPU
    if choice != AUTO:
        if precision in CPU_ONLY_PRECISIONS:
            check_combination(precision, "torch", choice)  # int8 on a GPU: that refusal, whatever the cluster
        if gpus == 0:
            raise DeviceError(f"device {choice} asked for, but {where} has no GPU; use `device` cpu (or auto)")
        if cuda_index(choice) != 0:
            raise DeviceError(
                f"device {choice}: on Ray each actor is given one whole GPU, which it sees as cuda:0; use `device` cuda"
            )
    check_gpus(actors, nodes)
    return "cuda:0"


def check_gpus(actors: int, nodes: list[int]) -> None:
    """On a GPU job each actor takes one GPU (``nodes``: each node's GPUs): more actors than GPUs
    would wait for a place forever."""
    total = sum(nodes)
    if total < actors:
        raise InputError(
            f"{actors} actor(s) take a GPU each; the Ray cluster has {total}: lower `actors` to at most {total}"
        )


def check_threads(actors: int, threads: int, nodes: list[int]) -> None:
    """Refuse actors that could not all be placed: an actor takes ``threads`` CPUs of one node
    (``nodes``: each node's CPUs), and Ray would wait for a place forever, saying nothing."""
    total = sum(nodes)
    if threads * actors > total:
        raise InputError(
            f"{actors} actor(s) x {threads} thread(s) need {threads * actors} CPUs; the Ray cluster has {total}: "
            "lower `actors` or `threads`"
        )
    places = sum(n // threads for n in nodes)
    if places < actors:
        sizes = ", ".join(str(n) for n in sorted(nodes, reverse=True))
        raise InputError(
            f"{actors} actor(s) of {threads} thread(s) each fit on {places} place(s) only: an actor runs on one node, "
            f"and the nodes have {sizes} CPUs; lower `threads` (at most {max(nodes)}) or `actors`"
        )
