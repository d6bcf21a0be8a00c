package main

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/timeagent-dev/timeagent/actions"
	"github.com/timeagent-dev/timeagent/journal"
)

// TimeAgent 0.2's fields (../shared/reference/timeagent-0.2-json.md): its
// clients (the VS Code extension) parse its schemaVersion 1 documents
// strictly, so status, diff, diff-file and actions carry its fields beside
// ours.

// taSessionJSON is TimeAgent's session object, merged into ours.
type taSessionJSON struct {
	Available                   bool     `json:"available"`
	State                       string   `json:"state"`
	Agent                       *string  `json:"agent"`
	Command                     *string  `json:"command"`
	Args                        []string `json:"args"`
	DurationMs                  *int64   `json:"durationMs"`
	UndoAvailable               bool     `json:"undoAvailable"`
	RecoveryCheckpointAvailable bool     `json:"recoveryCheckpointAvailable"`
	InvalidReason               *string  `json:"invalidReason"`
}

// taChangesJSON counts a session's changed paths (typechanged counts as
// modified).
type taChangesJSON struct {
	Created  int `json:"created"`
	Modified int `json:"modified"`
	Deleted  int `json:"deleted"`
}

// taActionSummaryJSON counts external actions.
type taActionSummaryJSON struct {
	Total    int `json:"total"`
	HighRisk int `json:"highRisk"`
	Critical int `json:"critical"`
	Denied   int `json:"denied"`
}

type taWarningJSON struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type taFileJSON struct {
	Path       string `json:"path"`
	ChangeType string `json:"changeType"`
	Binary     bool   `json:"binary"`
}

type taDiffSummaryJSON struct {
	taChangesJSON
	Total int `json:"total"`
}

// taActionJSON is one action: ours (journal.Action) and TimeAgent's.
type taActionJSON struct {
	journal.Action
	ID        string   `json:"id"`
	Timestamp string   `json:"timestamp"`
	Command   string   `json:"command"`
	Args      []string `json:"args"`
	Status    string   `json:"status"`
}

// taChangeType is TimeAgent's name of a change, which has no typechanged.
func taChangeType(c journal.Change) string {
	if k := changeKind(c); k != "typechanged" {
		return k
	}
	return "modified"
}

func taCountChanges(changes []journal.Change) taChangesJSON {
	var n taChangesJSON
	for _, c := range changes {
		switch taChangeType(c) {
		case "created":
			n.Created++
		case "deleted":
			n.Deleted++
		default:
			n.Modified++
		}
	}
	return n
}

func taSummarizeActions(list []journal.Action) taActionSummaryJSON {
	s := taActionSummaryJSON{Total: len(list)}
	for _, a := range list {
		switch a.Risk {
		case actions.RiskHigh:
			s.HighRisk++
		case actions.RiskCritical:
			s.Critical++
		}
		if a.Decision == actions.DecisionDenied {
			s.Denied++
		}
	}
	return s
}

// taSessionState is TimeAgent's name of a status state.
func taSessionState(state string) string {
	switch state {
	case stateAbsent:
		return "none"
	case stateStopped:
		return stateActive
	}
	return state
}

const taInterruptedMessage = "this session was interrupted; the diff shows what it had changed when it died"

// taWarning is the warning of a diff of an interrupted session.
func taWarning(interrupted bool) (string, *taWarningJSON) {
	if !interrupted {
		return stateCompleted, nil
	}
	return stateInterrupted, &taWarningJSON{Code: "interrupted-session", Message: taInterruptedMessage}
}

// fillTA02 adds TimeAgent's fields to a status document: the session object
// (there is always one, with available false when there is no session) and
// the repository. Changes and external actions are counted by status.
func (st *statusJSON) fillTA02(now time.Time) {
	st.Repository = "."
	if st.Session == nil {
		st.Session = &sessionJSON{Argv: []string{}, Tasks: []uint64{}}
	}
	s := st.Session
	s.taSessionJSON = taSessionJSON{State: taSessionState(st.State), Args: []string{}}
	if st.State == stateInvalid {
		reason := st.Error
		s.InvalidReason = &reason
	}
	if s.ID == 0 {
		return
	}
	s.Available = true
	if len(s.Argv) > 0 {
		cmd, agent := s.Argv[0], filepath.Base(s.Argv[0])
		s.Command, s.Agent = &cmd, &agent
		s.Args = append(s.Args, s.Argv[1:]...)
	}
	if s.StartedAt != nil {
		if start, err := time.Parse(time.RFC3339Nano, *s.StartedAt); err == nil {
			end := now
			if e, err := time.Parse(time.RFC3339Nano, s.EndedAt); err == nil {
				end = e
			}
			ms := end.Sub(start).Milliseconds()
			s.DurationMs = &ms
		}
	}
	moves := st.State == stateCompleted || st.State == stateInterrupted || (st.State == stateActive && st.Mode == "fuse")
	s.UndoAvailable = st.ActiveTask != 0 && moves
	s.RecoveryCheckpointAvailable = st.State == stateInterrupted && s.UndoAvailable
}

// fillTA02 adds TimeAgent's fields to a diff document.
func (d *diffJSON) fillTA02(j *journal.Journal, changes []journal.Change) error {
	d.SessionState, d.Warning = taWarning(d.Interrupted)
	d.Files = []taFileJSON{}
	n := taCountChanges(changes)
	d.Summary = taDiffSummaryJSON{taChangesJSON: n, Total: len(changes)}
	for _, c := range changes {
		bin, err := changeBinary(j, c)
		if err != nil {
			return fmt.Errorf("read %s: %w", c.Path, err)
		}
		d.Files = append(d.Files, taFileJSON{Path: c.Path, ChangeType: taChangeType(c), Binary: bin})
	}
	return nil
}

// changeBinary reports whether either side of a change is binary content
// (content over the text limit is not read: it counts as text).
func changeBinary(j *journal.Journal, c journal.Change) (bool, error) {
	for _, s := range []journal.NodeState{c.Before, c.After} {
		_, _, bin, err := textOf(j, s)
		if err != nil || bin {
			return bin, err
		}
	}
	return false, nil
}

// fillTA02 adds TimeAgent's fields to one side of a diff-file document.
func (s *sideJSON) fillTA02(st journal.NodeState, tooLarge bool) {
	s.Exists = st.Kind != journal.Absent
	if !s.Exists {
		return
	}
	if s.Text != nil {
		s.ContentAvailable, s.Content = true, s.Text
		return
	}
	reason := "unavailable"
	switch {
	case s.Binary:
		reason = "binary"
	case tooLarge:
		reason = "too-large"
	}
	s.UnavailableReason = &reason
}

// taAction is one action with TimeAgent's fields.
func taAction(a journal.Action) taActionJSON {
	out := taActionJSON{Action: a, ID: fmt.Sprintf("%d-%d", a.Session, a.Seq), Timestamp: jsonTime(a.Time),
		Command: a.Tool, Args: []string{}}
	if len(a.Argv) > 1 {
		out.Args = append(out.Args, a.Argv[1:]...)
	}
	if out.Command == "" && len(a.Argv) > 0 {
		out.Command = a.Argv[0]
	}
	switch {
	case a.Decision == actions.DecisionDenied:
		out.Status = "denied"
	case a.ExitCode == actions.ExitUnknown:
		out.Status = "allowed" // ran; its end was not seen
	case a.ExitCode == 0:
		out.Status = "completed"
	default:
		out.Status = "failed"
	}
	return out
}
