"""tern as an installed agent of Harbor (the Terminal-Bench 2.0 harness).

Built on Harbor's ``BaseInstalledAgent`` (``harbor.agents.installed.base``, harbor 0.26.0 on
PyPI), the way Harbor's own installed agents (Claude Code, Codex, Goose, Aider) are written:

- ``install`` uploads tern's four binaries (``tern``, ``tern-fs``, ``tern-shell``,
  ``tern-web``) from this machine into ``/installed-agent/tern/bin`` of the task environment:
  tern is one static-ish Rust build, no package manager or network needed in the container;
- ``configure`` writes tern's config into ``/logs/agent/tern-home`` (``TERN_HOME``, inside the
  agent logs Harbor syncs back), with the task's MCP servers (``[environment].mcp_servers``)
  as ``[mcp_servers.NAME]`` tables; Harbor's ``skills_dir`` is not used (tern has no skills);
- ``run`` runs ``tern run`` headless (``--output-format jsonl``, ``--mode yolo`` as Harbor's
  agents run with every permission in their container) with the model Harbor names
  (``anthropic/…``, ``openai/…``; any other provider prefix is taken as an OpenAI-compatible
  server — llama.cpp, vLLM, Ollama — reached through ``OPENAI_BASE_URL``), then writes the run
  as an ATIF trajectory with ``tern trace RUN --format atif`` to ``/logs/agent/trajectory.json``,
  its events to ``/logs/agent/events.jsonl`` and the final answer to ``/logs/agent/answer.txt``
  (what tern's converted tasks' verifiers read);
- ``populate_context_post_run`` fills Harbor's token and cost counts from the trajectory's
  ``final_metrics``.

Use it with ``harbor run --agent-import-path tern_harbor:Tern --model anthropic/claude-sonnet-4-5
--dataset terminal-bench@2.0`` (see this package's README).
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path, PurePosixPath
from typing import Any, override

from pydantic import Field

from harbor.agents.capabilities import AgentCapabilities
from harbor.agents.installed.base import BaseInstalledAgent, with_prompt_template
from harbor.agents.options import InstalledAgentOptions
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext

AGENT_DIR = PurePosixPath("/installed-agent/tern")
BIN_DIR = AGENT_DIR / "bin"
LOGS_DIR = PurePosixPath("/logs/agent")
TERN_HOME = LOGS_DIR / "tern-home"
BINARIES = ("tern", "tern-fs", "tern-shell", "tern-web")
# What tern reads of the model's connection; passed through when set here or in `--ae`.
MODEL_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL")


class TernOptions(InstalledAgentOptions):
    """``--agent-kwarg`` options of the tern agent."""

    bin_dir: str | None = Field(
        default=None,
        description="Directory with tern's binaries to upload (default: $TERN_HARBOR_BIN_DIR, "
        "else the directory of `tern` on PATH). They must run in the task's container: build "
        "for its libc (e.g. --target x86_64-unknown-linux-musl).",
    )
    max_steps: int | None = Field(default=None, ge=1, description="Model turns before tern stops.")
    mode: str = Field(default="yolo", description="tern's permission mode.")


def split_model(model_name: str | None) -> tuple[str | None, str | None]:
    """Harbor's ``provider/model`` as tern's ``(--provider, --model)``.

    ``anthropic`` and ``openai`` are tern's providers; any other prefix (``hosted_vllm``,
    ``ollama``, ``openrouter``…) names an OpenAI-compatible server.
    """
    if not model_name:
        return None, None
    provider, sep, model = model_name.partition("/")
    if not sep:
        return None, model_name
    if provider == "anthropic":
        return "anthropic", model
    return "openai", model


def toml_string(value: str) -> str:
    return json.dumps(value)


def mcp_config(servers: list[Any]) -> str:
    """Harbor's ``MCPServerConfig`` list as tern's ``[mcp_servers.NAME]`` tables."""
    out = []
    for s in servers:
        out.append(f"[mcp_servers.{toml_string(s.name)}]")
        if s.transport == "stdio":
            out.append(f"command = {toml_string(s.command)}")
            out.append("args = [" + ", ".join(toml_string(a) for a in s.args) + "]")
        else:
            # tern speaks streamable HTTP; an SSE-only server fails to start, with its reason in
            # the run's events.
            out.append(f"url = {toml_string(s.url)}")
            if s.headers:
                pairs = ", ".join(f"{toml_string(k)} = {toml_string(v)}" for k, v in s.headers.items())
                out.append(f"http_headers = {{ {pairs} }}")
        out.append("")
    return "\n".join(out)


class Tern(BaseInstalledAgent):
    """tern, the MCP-native terminal agent, as a Harbor installed agent."""

    capabilities = AgentCapabilities(atif=True, mcp_servers=True)
    options_model = TernOptions

    @staticmethod
    @override
    def name() -> str:
        return "tern"

    @override
    def get_version_command(self) -> str | None:
        return f"{BIN_DIR}/tern --version"

    @override
    def parse_version(self, stdout: str) -> str:
        return stdout.strip().removeprefix("tern").strip()

    @property
    def _options(self) -> TernOptions:
        return self.options if isinstance(self.options, TernOptions) else TernOptions()

    def local_bin_dir(self) -> Path:
        """Where tern's binaries are on this machine."""
        configured = self._options.bin_dir or os.environ.get("TERN_HARBOR_BIN_DIR")
        if configured:
            return Path(configured)
        for entry in os.environ.get("PATH", "").split(os.pathsep):
            if entry and (Path(entry) / "tern").is_file():
                return Path(entry)
        raise RuntimeError(
            "tern's binaries were not found: set TERN_HARBOR_BIN_DIR (or --agent-kwarg "
            "bin_dir=DIR) to a directory with tern, tern-fs, tern-shell and tern-web"
        )

    @override
    async def install(self, environment: BaseEnvironment) -> None:
        local = self.local_bin_dir()
        missing = [b for b in BINARIES if not (local / b).is_file()]
        if missing:
            raise RuntimeError(f"{local} lacks {', '.join(missing)}: build tern with `cargo build --release`")
        await self.exec_as_root(environment, f"mkdir -p {BIN_DIR}")
        for binary in BINARIES:
            await environment.upload_file(local / binary, str(BIN_DIR / binary))
        await self.exec_as_root(
            environment,
            f"chmod 755 {' '.join(str(BIN_DIR / b) for b in BINARIES)} && {BIN_DIR}/tern --version",
        )

    def config_toml(self) -> str:
        """tern's ``config.toml`` for this trial: the task's MCP servers, no web fetches unless
        the task asks for them through a server of its own."""
        return "[mcp_servers.web]\nenabled = false\n\n" + mcp_config(self.mcp_servers)

    @override
    async def configure(self, environment: BaseEnvironment) -> None:
        await self.exec_as_agent(environment, f"mkdir -p {TERN_HOME}")
        await self._upload_config_text(
            environment,
            content=self.config_toml(),
            remote_path=str(TERN_HOME / "config.toml"),
            filename="config.toml",
        )

    def run_command(self, instruction: str) -> str:
        """The shell command that runs tern on ``instruction`` and leaves its logs in
        ``/logs/agent``."""
        provider, model = split_model(self.model_name)
        args = [f"{BIN_DIR}/tern", "run", "--output-format", "jsonl", "--mode", self._options.mode]
        if provider:
            args += ["--provider", provider]
        if model:
            args += ["--model", model]
        if self._options.max_steps:
            args += ["--max-steps", str(self._options.max_steps)]
        args += ["--goal", instruction]
        run = " ".join(shlex.quote(a) for a in args)
        logs = LOGS_DIR
        return (
            f"export TERN_HOME={TERN_HOME} PATH={BIN_DIR}:$PATH; "
            f"{run} > {logs}/tern.jsonl 2> {logs}/tern-stderr.txt; status=$?; "
            f'run=$(ls -1 {TERN_HOME}/runs 2>/dev/null | tail -n 1); '
            f'if [ -n "$run" ]; then '
            f'cp "{TERN_HOME}/runs/$run/events.jsonl" {logs}/events.jsonl; '
            f'{BIN_DIR}/tern trace "$run" --format atif > {logs}/trajectory.json; fi; '
            # tern's exit code for a failed run is 1; the verifier judges the work, so only a
            # failure to start at all (2: usage or config) fails the agent step.
            f'[ "$status" -ne 2 ]'
        )

    @override
    @with_prompt_template
    async def run(self, instruction: str, environment: BaseEnvironment, context: AgentContext) -> None:
        env = {k: v for k in MODEL_ENV if (v := self._get_env(k))}
        await self.exec_as_agent(environment, self.run_command(instruction), env=env)

    @override
    def populate_context_post_run(self, context: AgentContext) -> None:
        trajectory = self.logs_dir / "trajectory.json"
        if trajectory.is_file():
            metrics = json.loads(trajectory.read_text()).get("final_metrics") or {}
            context.n_input_tokens = metrics.get("total_prompt_tokens")
            context.n_cache_tokens = metrics.get("total_cached_tokens")
            context.n_output_tokens = metrics.get("total_completion_tokens")
            context.cost_usd = metrics.get("total_cost_usd")
        events = self.logs_dir / "tern.jsonl"
        if events.is_file():
            for line in reversed(events.read_text().splitlines()):
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if event.get("type") == "run_finished":
                    answer = event.get("answer") or ""
                    (self.logs_dir / "answer.txt").write_text(answer)
                    context.metadata = {
                        **(context.metadata or {}),
                        "tern_status": event.get("status"),
                        "tern_steps": event.get("steps"),
                    }
                    break
