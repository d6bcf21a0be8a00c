package actions

import (
	"os"

	"github.com/timeagent-dev/timeagent/journal"
)

// WriteAction records a in a session's action log dir (EnvActionsDir) the
// way a proxy does: one file per call, written atomically. An agent's
// pre-tool hook records the commands it classifies with it.
func WriteAction(dir string, a journal.Action) error {
	return writeRecord(dir, recordName(a, os.Getpid()), a)
}
