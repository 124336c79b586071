"""The parts of the waits layer, made from the settings: the policy every request is checked
against, the wake routes, the screen judge (OCR, and a vision model when configured), and
the system-activity sources. Everything that reaches beyond files under the home
directory is off until a setting turns it on."""

from __future__ import annotations

from pathlib import Path

from memoryd.config import Settings, config_file_path
from memoryd.graph.jsonfile import project_graph_path
from memoryd.waits import (
    FrameJudge,
    VisionClient,
    VisionConfig,
    WaitPolicy,
    WakeDispatcher,
    WakeSettings,
)
from memoryd.waits.activity import ActivitySettings


def _secret(value: object) -> str | None:
    getter = getattr(value, "get_secret_value", None)
    return getter() if callable(getter) else None


def vision_config(settings: Settings) -> VisionConfig | None:
    """The vision endpoint of screen waits, when both its URL and model are set."""
    if not (settings.wait_vision_url and settings.wait_vision_model):
        return None
    return VisionConfig(base_url=settings.wait_vision_url, model=settings.wait_vision_model,
                        api_key=_secret(settings.wait_vision_api_key))


# The directory of a project's graph file (<root>/.knowledge/graph.json): the file mirrors
# every agent's nodes of the project, so no wait watches in it.
GRAPH_DIR = project_graph_path("/").parent.name


def memoryd_files(settings: Settings) -> tuple[Path, ...]:
    """memoryd's own files, which no wait may watch: the home directory, the config file and
    an SQLite store elsewhere (with its -wal/-shm siblings, by the name-prefix rule)."""
    paths = [Path(settings.home).expanduser(), config_file_path()]
    url = settings.store_url or ""
    if url.startswith("sqlite:///"):
        paths.append(Path(url[len("sqlite://"):].split("?", 1)[0]))
    return tuple(paths)


def wait_policy(settings: Settings) -> WaitPolicy:
    """What waits may watch: files under ``wait_allowed_roots`` (default the home
    directory) but never memoryd's own (nor a project's graph file); commands, link-local
    addresses and the screen only when enabled. Keys bound to a scope or agent may watch files
    only under roots that were configured explicitly."""
    explicit = tuple(Path(p).expanduser() for p in settings.wait_allowed_roots)
    roots = explicit or (Path.home(),)
    return WaitPolicy(allowed_roots=roots, confined_roots=explicit,
                      denied_paths=memoryd_files(settings), denied_dirs=(GRAPH_DIR,),
                      allow_link_local=settings.wait_allow_link_local,
                      display=settings.wait_display, tmux_socket=settings.wait_tmux_socket,
                      vision=vision_config(settings) is not None,
                      allow_spawn=settings.wait_allow_spawn,
                      max_watching=settings.wait_max_watching)


def wake_settings(settings: Settings) -> WakeSettings:
    """The configured wake routes (OpenClaw gateway, webhook); none by default."""
    return WakeSettings(openclaw_url=settings.wake_openclaw_url,
                        openclaw_token=_secret(settings.wake_openclaw_token),
                        openclaw_session_key=settings.wake_openclaw_session_key,
                        webhook_url=settings.wake_webhook_url,
                        webhook_secret=_secret(settings.wake_webhook_secret))


def wake_dispatcher(settings: Settings) -> WakeDispatcher | None:
    """A dispatcher when any route is configured (its worker thread starts at once)."""
    wake = wake_settings(settings)
    return WakeDispatcher(wake) if wake.routes else None


def frame_judge(settings: Settings) -> FrameJudge | None:
    """The screen judge when screen waits are possible (a display is set)."""
    if not settings.wait_display:
        return None
    vision = vision_config(settings)
    return FrameJudge(VisionClient(vision) if vision else None)


def activity_settings(settings: Settings) -> ActivitySettings:
    """Which system-activity sources run (all off by default)."""
    return ActivitySettings(
        processes=settings.activity_processes,
        process_rss_mb=settings.activity_process_rss_mb,
        process_cpu_percent=settings.activity_process_cpu_percent,
        swap=settings.activity_swap, swap_percent=settings.activity_swap_percent,
        disk=settings.activity_disk, disk_percent=settings.activity_disk_percent,
        log_files=tuple(settings.activity_log_files), interval_s=settings.activity_interval_s)
