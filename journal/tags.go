package journal

import (
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/timeagent-dev/timeagent/tasks"
)

// Tags returns every tag: name -> the task it names.
func (j *Journal) Tags() (map[string]tasks.ID, error) {
	out := map[string]tasks.ID{}
	err := j.scan("read tags", []byte{prefixTag}, func(k, v []byte) error {
		id, err := parseU64(v)
		if err != nil {
			return fmt.Errorf("%s: %w", describeKey(k), err)
		}
		out[string(k[1:])] = tasks.ID(id)
		return nil
	})
	return out, err
}

// Tag returns the task name names (ErrNotFound if there is no such tag).
func (j *Journal) Tag(name string) (tasks.ID, error) {
	var id tasks.ID
	err := j.view(fmt.Sprintf("read tag %q", name), func(txn *badger.Txn) error {
		v, err := getCopy(txn, tagKey(name))
		if err != nil {
			return err
		}
		n, err := parseU64(v)
		id = tasks.ID(n)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("read tag %q: %w", name, err)
	}
	return id, nil
}

// Tag reads one tag inside the transaction (ErrNotFound if missing).
func (tx *Tx) Tag(name string) (id tasks.ID, err error) {
	defer func() {
		if r := recover(); r != nil {
			id, err = 0, fmt.Errorf("read tag %q: %w: badger panicked: %v", name, ErrCorrupt, r)
		}
	}()
	v, err := getCopy(tx.txn, tagKey(name))
	if err != nil {
		return 0, fmt.Errorf("read tag %q: %w", name, err)
	}
	n, err := parseU64(v)
	if err != nil {
		return 0, fmt.Errorf("read tag %q: %w", name, err)
	}
	return tasks.ID(n), nil
}

// PutTag makes name name task id.
func (tx *Tx) PutTag(name string, id tasks.ID) error {
	if name == "" {
		return errors.New("write tag: empty name")
	}
	if err := tx.txn.Set(tagKey(name), u64(uint64(id))); err != nil {
		return fmt.Errorf("write tag %q: %w", name, err)
	}
	return nil
}

// DeleteTag removes the tag name.
func (tx *Tx) DeleteTag(name string) error {
	if err := tx.txn.Delete(tagKey(name)); err != nil {
		return fmt.Errorf("delete tag %q: %w", name, err)
	}
	return nil
}
