package memifnode

import (
	"strings"
	"testing"
)

const renderedConfigMap = `apiVersion: v1
data:
  devicemanager.conf: |
    # How often allocations are reconciled.
    reconcile-period: 1m
  podmanager.conf: |
    # How often pods are compared.

    reconcile-period: 30s
kind: ConfigMap
`

func TestSetConfigKeys(t *testing.T) {
	tests := []struct {
		name    string
		keys    map[string]map[string]string
		want    string // a line the result holds
		keep    string // a line the result still holds
		wantErr string
	}{
		{
			name: "the key of the named file only",
			keys: map[string]map[string]string{"podmanager.conf": {"reconcile-period": "2s"}},
			want: "    reconcile-period: 2s\nkind: ConfigMap", keep: "    reconcile-period: 1m\n",
		},
		{name: "no such file", keys: map[string]map[string]string{"other.conf": {"a": "b"}}, wantErr: "no other.conf"},
		{name: "no such key", keys: map[string]map[string]string{"podmanager.conf": {"period": "2s"}}, wantErr: "no key period"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := setConfigKeys([]byte(renderedConfigMap), tc.keys)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("setConfigKeys error = %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(got), tc.want) || !strings.Contains(string(got), tc.keep) {
				t.Errorf("setConfigKeys gave\n%s\nwant it to hold %q and %q", got, tc.want, tc.keep)
			}
		})
	}
}
