package hooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/timeagent-dev/timeagent/tasks"
)

// StateName is the file in a root's state dir where the hooks keep State.
const StateName = "hooks.json"

// maxViews bounds the conversations State remembers (the oldest view is
// dropped first).
const maxViews = 32

// View is where the files were when a conversation last saw them.
type View struct {
	Task tasks.ID  `json:"task"`
	At   time.Time `json:"at"`
}

// State is the hooks' small per-root record.
type State struct {
	// Views holds, per conversation (the agent's session_id; "" when it
	// gives none), the task the files were at when that conversation last
	// saw them: the end of its last turn, or its last prompt.
	Views map[string]View `json:"views,omitempty"`
	// Prompt is the summary of the prompt whose work a copy capture has not
	// recorded yet (set by the prompt hook, cleared by the stop hook).
	Prompt string `json:"prompt,omitempty"`
	// Capturing is the task a copy capture is committing: when it exists,
	// the stat cache may not have caught up with it yet (a crash between
	// the task's commit and the cache's save), and its changes must not be
	// recorded again.
	Capturing tasks.ID `json:"capturing,omitempty"`
}

// Saw records that conversation conv saw the files at task at time at.
func (s *State) Saw(conv string, task tasks.ID, at time.Time) {
	if s.Views == nil {
		s.Views = map[string]View{}
	}
	s.Views[conv] = View{Task: task, At: at}
	for len(s.Views) > maxViews {
		oldest, found := "", false
		for k, v := range s.Views {
			if k != conv && (!found || v.At.Before(s.Views[oldest].At)) {
				oldest, found = k, true
			}
		}
		delete(s.Views, oldest)
	}
}

// LoadState reads the record of the state dir; a missing record is empty.
func LoadState(stateDir string) (State, error) {
	var s State
	b, err := os.ReadFile(filepath.Join(stateDir, StateName))
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("read %s: %w", filepath.Join(stateDir, StateName), err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		// A damaged record only costs a note: start afresh.
		return State{}, nil
	}
	return s, nil
}

// SaveState writes the record atomically (a temporary file renamed over it).
func SaveState(stateDir string, s State) error {
	p := filepath.Join(stateDir, StateName)
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	tmp, err := os.CreateTemp(stateDir, ".hooks-*.json")
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	_, werr := tmp.Write(append(b, '\n'))
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", p, err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}
