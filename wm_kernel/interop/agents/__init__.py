"""Readers of other agents' own logs: claude-trace captures of Claude Code's traffic, OpenAI Codex CLI
rollouts, OpenHands trajectories (a Claude Code transcript's reader is ``wm_kernel.interop.claude_code``).
Each registers its log format when imported; ``wm_kernel.interop`` imports them all."""
