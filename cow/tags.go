package cow

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// Tags are names for tasks, kept in the journal beside the history they
// name (history.go owns history's writes; tags are written only here).

// MaxTagLen is the longest tag name, in bytes.
const MaxTagLen = 64

// ErrBadTagName: a tag name breaks one of ValidTagName's rules.
var ErrBadTagName = errors.New("invalid tag name")

// ErrTagExists: the tag names another task and moving it was not asked for.
var ErrTagExists = errors.New("tag exists")

// ErrNoTag: there is no tag of that name.
var ErrNoTag = errors.New("no such tag")

// ValidTagName checks a tag name and returns an error naming the rule it
// breaks: 1 to MaxTagLen bytes of UTF-8, no whitespace or control
// characters, not starting with '-' (it would read as a flag), and not
// all digits (it would read as a task id).
func ValidTagName(name string) error {
	bad := func(rule string) error { return fmt.Errorf("%w %q: %s", ErrBadTagName, name, rule) }
	switch {
	case name == "":
		return bad("a tag name cannot be empty")
	case len(name) > MaxTagLen:
		return bad(fmt.Sprintf("too long (%d bytes; at most %d)", len(name), MaxTagLen))
	case !utf8.ValidString(name):
		return bad("not valid UTF-8")
	case name[0] == '-':
		return bad("a tag name cannot start with '-'")
	}
	digits := true
	for _, r := range name {
		if unicode.IsSpace(r) {
			return bad("a tag name cannot contain whitespace")
		}
		if unicode.IsControl(r) || r == utf8.RuneError {
			return bad("a tag name cannot contain control characters")
		}
		digits = digits && r >= '0' && r <= '9'
	}
	if digits {
		return bad("all digits would read as a task id: add a letter")
	}
	return nil
}

// SetTag makes name name task id (which must exist; not the base). A tag
// that names another task is moved only with force; otherwise the error
// wraps ErrTagExists and names the task. It returns the task the tag named
// before (0 when it is new).
func SetTag(j *journal.Journal, name string, id tasks.ID, force bool) (tasks.ID, error) {
	if err := ValidTagName(name); err != nil {
		return 0, err
	}
	var old tasks.ID
	err := j.Update(func(tx *journal.Tx) error {
		if id == tasks.Base {
			return errors.New("the base (task 0) cannot be tagged: it is always task 0")
		}
		if _, err := tx.Task(id); errors.Is(err, journal.ErrNotFound) {
			return fmt.Errorf("%w %d", tasks.ErrUnknown, id)
		} else if err != nil {
			return err
		}
		prev, err := tx.Tag(name)
		switch {
		case errors.Is(err, journal.ErrNotFound):
			prev = 0
		case err != nil:
			return err
		case prev != id && !force:
			return fmt.Errorf("%w: %q names task %d; pass --force to move it to task %d", ErrTagExists, name, prev, id)
		}
		old = prev
		return tx.PutTag(name, id)
	})
	if err != nil {
		return 0, fmt.Errorf("tag %q: %w", name, err)
	}
	return old, nil
}

// DeleteTag removes the tag name and returns the task it named.
func DeleteTag(j *journal.Journal, name string) (tasks.ID, error) {
	var old tasks.ID
	err := j.Update(func(tx *journal.Tx) error {
		id, err := tx.Tag(name)
		if errors.Is(err, journal.ErrNotFound) {
			return fmt.Errorf("%w %q (timeagent tag lists them)", ErrNoTag, name)
		}
		if err != nil {
			return err
		}
		old = id
		return tx.DeleteTag(name)
	})
	if err != nil {
		return 0, fmt.Errorf("delete tag %q: %w", name, err)
	}
	return old, nil
}
