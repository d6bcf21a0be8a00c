package mountinfo

import (
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	in := "36 35 98:0 /mnt1 /mnt/with\\040space rw,noatime master:1 - ext3 /dev/root rw\n" +
		"70 48 0:39 / /tmp/r fuse.timeagent rw - fuse.timeagent timeagent rw,user_id=0\n" +
		"garbage\n\n"
	want := []Mount{
		{Dev: "98:0", Point: "/mnt/with space", FSType: "ext3"},
		{Dev: "0:39", Point: "/tmp/r", FSType: "fuse.timeagent"},
	}
	if got := Parse(in); !reflect.DeepEqual(got, want) {
		t.Fatalf("Parse = %+v, want %+v", got, want)
	}
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{`/a\040b`: "/a b", `/plain`: "/plain", `/x\134y`: `/x\y`, `/bad\9`: `/bad\9`} {
		if got := Unescape(in); got != want {
			t.Errorf("Unescape(%q) = %q, want %q", in, got, want)
		}
	}
}
