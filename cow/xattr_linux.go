package cow

import (
	"fmt"

	"github.com/timeagent-dev/timeagent/internal/xattr"
)

// keepXattrs gives the staging file tmp in d the extended attributes of the
// regular file name it will replace, if there is one: node states hold no
// extended attributes, so a file an apply rewrites keeps those it had.
func keepXattrs(d *dirHandle, name, tmp string) error {
	st, err := d.lstat(name)
	if err != nil || st.kind != fileKind {
		return nil // nothing to keep: the file is new, or another kind
	}
	return xattr.Copy(fmt.Sprintf("/proc/self/fd/%d/%s", d.fd, name), fmt.Sprintf("/proc/self/fd/%d/%s", d.fd, tmp))
}
