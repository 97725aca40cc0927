"""Tests of tern's Harbor agent against Harbor's own base classes (harbor 0.26.0).

The end-to-end test runs the agent's real ``setup`` (install, configure, version) and ``run``
in a ``LocalEnvironment``: Harbor's environment interface (``exec``, ``upload_file``) on this
machine, in a root where ``/installed-agent``, ``/logs/agent`` and ``/app`` exist — the one
``tern eval`` builds for Harbor tasks (``tern __harbor-root`` in a user and mount namespace).
tern talks to the mock model server the Rust test started (``TERN_E2E_MOCK_URL``); the
trajectory it leaves is checked with Harbor's ``TrajectoryValidator``.

Run by ``tests/suite/harbor_agent.rs`` (``cargo test -p tern-e2e harbor_agent``), which builds
the binaries, starts the mock server and sets the variables.
"""

from __future__ import annotations

import os

# Harbor resolves model info through LiteLLM, which otherwise fetches its price table from the
# network at first use: tests stay offline (LiteLLM's documented switch to its bundled copy).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import asyncio
import json
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

from harbor.environments.base import ExecResult
from harbor.models.agent.context import AgentContext
from harbor.models.task.config import MCPServerConfig
from harbor.utils.trajectory_validator import TrajectoryValidator

from tern_harbor import Tern
from tern_harbor.agent import BINARIES, mcp_config, split_model


class LocalEnvironment:
    """Harbor's environment interface, on this machine, in a root of its own."""

    default_user = None

    def __init__(self, tern: Path, scratch: Path, logs: Path):
        self.tern = tern
        self.scratch = scratch
        self.binds = {
            "/installed-agent": scratch / "installed-agent",
            "/logs/agent": logs,
            "/app": scratch / "app",
        }
        for d in self.binds.values():
            d.mkdir(parents=True, exist_ok=True)
        self.commands: list[tuple[str, str | None]] = []

    def host_path(self, inside: str) -> Path:
        for prefix, outside in self.binds.items():
            if inside == prefix or inside.startswith(prefix + "/"):
                return outside / inside[len(prefix) :].lstrip("/")
        raise AssertionError(f"{inside} is outside the environment's binds")

    async def exec(self, command, cwd=None, env=None, timeout_sec=None, user=None) -> ExecResult:
        self.commands.append((command, None if user is None else str(user)))
        root = Path(tempfile.mkdtemp(dir=self.scratch, prefix="root-"))
        args = ["unshare", "--user", "--map-root-user", "--mount", "--pid", "--fork",
                "--kill-child", "--mount-proc", "--", str(self.tern), "__harbor-root",
                "--root", str(root)]
        for inside, outside in self.binds.items():
            args += ["--bind", f"{inside}={outside}"]
        args += ["--cwd", cwd or "/app", "--", "bash", "-c", command]
        proc = await asyncio.create_subprocess_exec(
            *args, env={**os.environ, **(env or {})},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        out, err = await asyncio.wait_for(proc.communicate(), timeout_sec or 120)
        return ExecResult(stdout=out.decode(), stderr=err.decode(), return_code=proc.returncode)

    async def upload_file(self, source_path, target_path):
        target = self.host_path(str(target_path))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source_path, target)

    async def upload_dir(self, source_dir, target_dir):
        shutil.copytree(source_dir, self.host_path(str(target_dir)), dirs_exist_ok=True)


class UnitTests(unittest.TestCase):
    def test_harbor_model_names_become_provider_and_model(self):
        self.assertEqual(split_model("anthropic/claude-sonnet-4-5"), ("anthropic", "claude-sonnet-4-5"))
        self.assertEqual(split_model("openai/gpt-4.1"), ("openai", "gpt-4.1"))
        # llama.cpp / vLLM / Ollama behind OPENAI_BASE_URL
        self.assertEqual(split_model("hosted_vllm/Qwen/Qwen2.5-Coder-1.5B"), ("openai", "Qwen/Qwen2.5-Coder-1.5B"))
        self.assertEqual(split_model("claude-haiku-4-5"), (None, "claude-haiku-4-5"))
        self.assertEqual(split_model(None), (None, None))

    def test_task_mcp_servers_become_tern_server_tables(self):
        servers = [
            MCPServerConfig(name="docs", transport="stdio", command="docs-server", args=["--root", "/app"]),
            MCPServerConfig(name="search", transport="streamable-http", url="http://127.0.0.1:9/mcp"),
        ]
        text = mcp_config(servers)
        self.assertIn('[mcp_servers."docs"]\ncommand = "docs-server"\nargs = ["--root", "/app"]', text)
        self.assertIn('[mcp_servers."search"]\nurl = "http://127.0.0.1:9/mcp"', text)

    def test_the_run_command_is_headless_with_harbors_model(self):
        with tempfile.TemporaryDirectory() as logs:
            agent = Tern(logs_dir=Path(logs), model_name="openai/qwen2.5-coder", max_steps=12)
            command = agent.run_command("fix 'it'")
        self.assertIn("/installed-agent/tern/bin/tern run --output-format jsonl --mode yolo", command)
        self.assertIn("--provider openai --model qwen2.5-coder --max-steps 12", command)
        self.assertIn("--goal 'fix '\"'\"'it'\"'\"''", command)
        self.assertIn("tern trace \"$run\" --format atif > /logs/agent/trajectory.json", command)

    def test_unknown_options_are_refused_by_harbor(self):
        with tempfile.TemporaryDirectory() as logs:
            with self.assertRaises(ValueError) as e:
                Tern(logs_dir=Path(logs), max_step=3)
        self.assertIn("max_step", str(e.exception))


@unittest.skipUnless(os.environ.get("TERN_E2E_MOCK_URL"), "needs the Rust test's mock model server")
class EndToEnd(unittest.TestCase):
    def test_setup_and_run_leave_a_valid_trajectory_and_fill_the_context(self):
        bin_dir = Path(os.environ["TERN_E2E_BIN_DIR"])
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            logs = tmp / "trial" / "agent"
            logs.mkdir(parents=True)
            env = LocalEnvironment(bin_dir / "tern", tmp / "env", logs)
            (env.binds["/app"] / "numbers.txt").write_text("3\n1\n2\n")
            agent = Tern(
                logs_dir=logs,
                model_name="anthropic/claude-sonnet-4-5",
                bin_dir=str(bin_dir),
                mcp_servers=[MCPServerConfig(name="extra", transport="stdio", command="true")],
                extra_env={"ANTHROPIC_BASE_URL": os.environ["TERN_E2E_MOCK_URL"],
                           "ANTHROPIC_API_KEY": "sk-ant-test"},
            )
            asyncio.run(agent.setup(env))
            for b in BINARIES:
                self.assertTrue((env.binds["/installed-agent"] / "tern" / "bin" / b).is_file())
            self.assertEqual(agent.version(), os.environ["TERN_E2E_VERSION"])
            config = (logs / "tern-home" / "config.toml").read_text()
            self.assertIn('[mcp_servers."extra"]', config)

            context = AgentContext()
            asyncio.run(agent.run("Sort numbers.txt into sorted.txt.", env, context))
            agent.populate_context_post_run(context)

            self.assertEqual((env.binds["/app"] / "sorted.txt").read_text(), "1\n2\n3\n")
            trajectory = logs / "trajectory.json"
            validator = TrajectoryValidator()
            self.assertTrue(validator.validate(trajectory), validator.errors)
            data = json.loads(trajectory.read_text())
            self.assertEqual(data["agent"]["name"], "tern")
            self.assertEqual(data["agent"]["model_name"], "claude-sonnet-4-5")
            self.assertEqual(data["steps"][0]["message"], "Sort numbers.txt into sorted.txt.")
            self.assertEqual(context.n_input_tokens, data["final_metrics"]["total_prompt_tokens"])
            self.assertGreater(context.n_input_tokens, 0)
            self.assertEqual(context.n_output_tokens, data["final_metrics"]["total_completion_tokens"])
            self.assertEqual((logs / "answer.txt").read_text(), "sorted.txt holds the numbers in order.")
            self.assertTrue((logs / "events.jsonl").is_file())
            self.assertEqual(context.metadata["tern_status"], "success")


if __name__ == "__main__":
    unittest.main()
