package memifnode

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestKitValues(t *testing.T) {
	tests := []struct {
		name    string
		keys    map[string]map[string]string
		want    map[string]any // the config value
		wantErr string
	}{
		{
			name: "YAML literals keep their types",
			keys: map[string]map[string]string{"podmanager.conf": {"reconcile-period": "2s"}, "devicemanager.conf": {"device-count": "8", "device-plugin": "false"}},
			want: map[string]any{
				"podmanager.conf":    map[string]any{"reconcile-period": "2s"},
				"devicemanager.conf": map[string]any{"device-count": float64(8), "device-plugin": false},
			},
		},
		{name: "not YAML", keys: map[string]map[string]string{"logs.conf": {"loggers": "[a"}}, wantErr: "logs.conf loggers"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			content, err := kitValues(9191, 9752, tc.keys)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("kitValues error = %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var values map[string]any
			if err := yaml.Unmarshal(content, &values); err != nil {
				t.Fatal(err)
			}
			got, _ := yaml.Marshal(values["config"])
			want, _ := yaml.Marshal(tc.want)
			if string(got) != string(want) {
				t.Errorf("config value =\n%s\nwant\n%s", got, want)
			}
			if ports, _ := yaml.Marshal([]any{values["http"], values["metrics"], values["image"]}); !strings.Contains(string(ports), "port: 9191") || !strings.Contains(string(ports), "port: 9752") || !strings.Contains(string(ports), "tag: dev") {
				t.Errorf("values %s lack the ports or the image tag", content)
			}
		})
	}
}

func TestTaskPID(t *testing.T) {
	const out = "TASK      PID     STATUS    \nabc123    4242    RUNNING\ndef456    0       STOPPED\n"
	tests := []struct {
		name, id string
		want     int
		wantErr  string
	}{
		{name: "a running task", id: "abc123", want: 4242},
		{name: "a stopped task", id: "def456", wantErr: "no running task def456"},
		{name: "no such task", id: "nope", wantErr: "no running task nope"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pid, err := taskPID(out, tc.id)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("taskPID(%s) = %d, %v; want an error saying %q", tc.id, pid, err, tc.wantErr)
				}
				return
			}
			if err != nil || pid != tc.want {
				t.Fatalf("taskPID(%s) = %d, %v; want %d", tc.id, pid, err, tc.want)
			}
		})
	}
}
