"""Which NodeProvider a cluster's config asks for: Docker containers by default,
real hosts over SSH when it names a nodes file (`--nodes-file`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from elr_harness.cluster.node import NodeProvider
from elr_harness.core.config import ClusterConfig

if TYPE_CHECKING:
    import docker


def provider_for(config: ClusterConfig,
                 client: docker.DockerClient | None = None) -> NodeProvider:
    """The provider of config's nodes (a Docker provider connects to the engine now,
    so a missing engine is reported before anything else)."""
    if config.nodes_file is not None:
        from elr_harness.cluster.ssh_backend import SshProvider

        return SshProvider(config)
    from elr_harness.cluster.docker_backend import DockerProvider

    return DockerProvider(config, client)
