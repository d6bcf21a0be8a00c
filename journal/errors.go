package journal

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/y"
)

// errnoError carries an errno recovered from a badger error message (badger
// formats its causes with %v, so errors.Is cannot see them) next to the
// original error: errors.Is(err, syscall.ENOSPC) and
// errors.Is(err, fs.ErrPermission) work on it.
type errnoError struct {
	errno syscall.Errno
	err   error
}

func (e *errnoError) Error() string   { return e.err.Error() }
func (e *errnoError) Unwrap() []error { return []error{e.errno, e.err} }

// resourceErrnos are the errnos that mean "the machine refused" rather than
// "the data is damaged"; their messages are recognised inside badger's
// unwrapped error strings.
var resourceErrnos = []syscall.Errno{
	syscall.ENOSPC, syscall.EACCES, syscall.EPERM, syscall.EROFS,
	syscall.ENOTDIR, syscall.EMFILE, syscall.ENFILE, syscall.ENOMEM,
	syscall.EIO, syscall.EDQUOT,
}

// classifyOpenError sorts an error from badger into ErrBusy (another process
// holds the directory lock), an error carrying its errno (no space,
// permission, read-only file system ...) or ErrCorrupt (everything else badger
// refuses to open: bad manifest, truncated tables or value logs, garbage).
func classifyOpenError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrBusy) || errors.Is(err, ErrCorrupt) {
		return err
	}
	msg := err.Error()
	if strings.Contains(msg, "Cannot acquire directory lock") {
		return fmt.Errorf("%w: %v", ErrBusy, err)
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if errno == syscall.EWOULDBLOCK {
			return fmt.Errorf("%w: %w", ErrBusy, err)
		}
		return err
	}
	for _, e := range resourceErrnos {
		if strings.Contains(msg, e.Error()) {
			return &errnoError{errno: e, err: err}
		}
	}
	if errors.Is(err, errClosed) || errors.Is(err, badger.ErrDBClosed) || errors.Is(err, badger.ErrBlockedWrites) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrCorrupt, err)
}

// readError classifies an error met while reading a record: checksum
// failures and unreadable value-log entries are ErrCorrupt, errnos are kept.
func readError(err error) error {
	if err == nil || errors.Is(err, ErrCorrupt) || errors.Is(err, ErrNotFound) {
		return err
	}
	if errors.Is(err, y.ErrChecksumMismatch) {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if errors.Is(err, errClosed) || errors.Is(err, badger.ErrDBClosed) || errors.Is(err, badger.ErrConflict) {
		return err
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return err
	}
	msg := err.Error()
	for _, e := range resourceErrnos {
		if strings.Contains(msg, e.Error()) {
			return &errnoError{errno: e, err: err}
		}
	}
	return fmt.Errorf("%w: %w", ErrCorrupt, err)
}

// writeError keeps an error met while writing as it is, except that an
// errno hidden in badger's message (no space, permission, I/O) is made
// visible to errors.Is.
func writeError(err error) error {
	if err == nil {
		return nil
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return err
	}
	msg := err.Error()
	for _, e := range resourceErrnos {
		if strings.Contains(msg, e.Error()) {
			return &errnoError{errno: e, err: err}
		}
	}
	return err
}
