"""Readers of other agents' own logs: claude-trace captures of Claude Code's traffic, OpenAI Codex CLI
rollouts, OpenHands trajectories (a Claude Code transcript's reader is ``wm_kernel.interop.claude_code``).
Each defines its ``LOG_FORMAT``, which ``wm_kernel.interop.readers`` lists and reads when first asked."""
