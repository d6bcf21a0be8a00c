// Package hooks is timeagent's side of the coding agents' hook mechanisms
// (Claude Code, Codex CLI, Gemini CLI): the event payloads their hooks read
// on stdin, the answers each agent expects on stdout, the summary of a user
// prompt, the classification of a shell command line with the PATH proxies'
// rule table, the note that tells an agent its files were moved, the small
// per-root record of what the agent last saw, and the merge of timeagent's
// entries into each agent's settings files (Integrate).
package hooks
