package hooks

import "encoding/json"

// specific is the hookSpecificOutput object of Claude Code and Codex (and
// Gemini's additionalContext).
type specific struct {
	HookEventName            string `json:"hookEventName"`
	AdditionalContext        string `json:"additionalContext,omitempty"`
	PermissionDecision       string `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string `json:"permissionDecisionReason,omitempty"`
}

type answer struct {
	HookSpecificOutput *specific `json:"hookSpecificOutput,omitempty"`
	Decision           string    `json:"decision,omitempty"`
	Reason             string    `json:"reason,omitempty"`
}

func encode(a answer) []byte {
	b, _ := json.Marshal(a)
	return append(b, '\n')
}

// Nothing is the answer of a hook with nothing to say: no output for Claude
// Code and Codex, an empty JSON object for Gemini (which reads only JSON).
func Nothing(agent Agent) []byte {
	if agent == Gemini {
		return []byte("{}\n")
	}
	return nil
}

// Context is the answer of a prompt hook that adds note to the agent's
// context: hookSpecificOutput.additionalContext in each agent's form (Claude
// Code shows it as a system message, Codex as a developer message, Gemini as
// an extra <hook_context> part of the prompt).
func Context(agent Agent, event, note string) []byte {
	if note == "" {
		return Nothing(agent)
	}
	return encode(answer{HookSpecificOutput: &specific{HookEventName: event, AdditionalContext: note}})
}

// Deny is the answer of a pre-tool hook that refuses the call, with the
// reason the agent shows its model: Claude Code's and Codex's
// permissionDecision "deny", Gemini's decision "deny".
func Deny(agent Agent, event, reason string) []byte {
	if agent == Gemini {
		return encode(answer{Decision: "deny", Reason: reason})
	}
	return encode(answer{HookSpecificOutput: &specific{HookEventName: event, PermissionDecision: "deny",
		PermissionDecisionReason: reason}})
}
