"""The node image, built locally with no container registry.

A minimal Debian is debootstrapped into a folder with the packages a node
needs, then `docker import`ed. The tag is a hash of the recipe (suite, mirror,
packages), so the image is built once and reused until the recipe changes.
Kafka itself is not in the image: its distribution is mounted read-only, so
switching Kafka versions needs no rebuild.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import docker
import docker.errors

from elr_harness.core.config import LABEL, ImageConfig, cache_dir, owner_labels
from elr_harness.core.errors import HarnessError

#: Bumped when the way the root filesystem is prepared changes.
RECIPE_VERSION = 1


def image_tag(config: ImageConfig) -> str:
    """`repository:<hash of the recipe>`: equal recipes share one image."""
    recipe = {
        "version": RECIPE_VERSION,
        "suite": config.suite,
        "mirror": config.mirror,
        "packages": sorted(config.packages),
        "base_image": config.base_image,
    }
    digest = hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:12]
    return f"{config.repository}:{digest}"


def ensure_image(client: docker.DockerClient, config: ImageConfig,
                 log: Callable[[str], None] = print) -> str:
    """Return the tag of the node image, building it first if it is missing."""
    tag = image_tag(config)
    try:
        client.images.get(tag)
        return tag
    except docker.errors.ImageNotFound:
        pass
    started = time.monotonic()
    if config.base_image:
        _build_from_registry_image(client, config, tag, log)
    else:
        _build_with_debootstrap(config, tag, log)
    log(f"node image {tag} built in {time.monotonic() - started:.0f} s")
    return tag


def _build_with_debootstrap(config: ImageConfig, tag: str, log: Callable[[str], None]) -> None:
    if shutil.which("debootstrap") is None:
        raise HarnessError(
            "debootstrap is not installed; run scripts/setup.sh (it installs debootstrap) "
            "or pass --base-image with a registry image"
        )
    work = Path(tempfile.mkdtemp(prefix="rootfs-", dir=_build_dir()))
    rootfs = work / "rootfs"
    try:
        log(f"building node image {tag} with debootstrap ({config.suite}); about a minute")
        _run(
            ["debootstrap", "--variant=minbase", f"--include={','.join(config.packages)}",
             config.suite, str(rootfs), config.mirror],
            "debootstrap",
        )
        _trim_rootfs(rootfs)
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "--numeric-owner", "-c", "."],
                               stdout=subprocess.PIPE)
        assert tar.stdout is not None
        imported = subprocess.run(
            ["docker", "import",
             "--change", f"LABEL {LABEL}=node-image",
             "--change", "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
             "-", tag],
            stdin=tar.stdout, capture_output=True, text=True,
        )
        tar.stdout.close()
        if tar.wait() != 0 or imported.returncode != 0:
            raise HarnessError(f"docker import of the node image failed: {imported.stderr.strip()}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _trim_rootfs(rootfs: Path) -> None:
    """Drop what a node never reads (apt lists, docs) to keep the image small."""
    for sub in ("var/lib/apt/lists", "usr/share/doc", "usr/share/man", "var/cache/apt"):
        target = rootfs / sub
        if target.is_dir():
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True, exist_ok=True)


def _build_from_registry_image(client: docker.DockerClient, config: ImageConfig, tag: str,
                               log: Callable[[str], None]) -> None:
    """Start from a registry image (where one is reachable) and apt-get the packages."""
    assert config.base_image is not None
    log(f"building node image {tag} from {config.base_image}")
    try:
        client.images.pull(config.base_image)
    except docker.errors.APIError as err:
        raise HarnessError(
            f"cannot pull base image {config.base_image}: {err.explanation}") from err
    container = client.containers.run(
        config.base_image,
        ["sh", "-c", "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "
         "--no-install-recommends " + " ".join(config.packages)],
        detach=True, labels={LABEL: "image-build", **owner_labels()},
    )
    try:
        result = container.wait()
        if result.get("StatusCode") != 0:
            tail = container.logs(tail=20).decode(errors="replace")
            raise HarnessError(f"installing node packages on {config.base_image} failed:\n{tail}")
        container.commit(repository=tag.split(":")[0], tag=tag.split(":")[1],
                         changes=[f"LABEL {LABEL}=node-image"])
    finally:
        container.remove(force=True)


def _build_dir() -> Path:
    path = cache_dir() / "build"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _run(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise HarnessError(f"{what} failed (exit {proc.returncode}):\n{tail}")
