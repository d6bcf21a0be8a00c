// Package agenttest drives the real coding-agent CLIs (Claude Code, OpenAI
// Codex CLI, Google Gemini CLI), installed from npm into a cache directory,
// against a scripted fake model server on 127.0.0.1 that speaks each
// client's wire format, inside `timeagent run` and without it, in real git
// repositories. Its tests are the package: `make test-agents` runs them.
package agenttest
