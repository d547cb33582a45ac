package nodeapi

import (
	"context"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	memifv1 "github.com/contivpp/memif-agent/api/memif/v1"
	"github.com/contivpp/memif-agent/internal/testutil/devicemanagerstandin"
	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
	"github.com/contivpp/memif-agent/plugins/nodeapi/server"
)

// vswitchStandInCommitter accepts every transaction; no vswitch runs here.
type vswitchStandInCommitter struct{}

func (vswitchStandInCommitter) Commit(context.Context, eventloop.CommitRequest) error { return nil }

func TestEventHistoryOfTheRealLoopOverTheAPI(t *testing.T) {
	loop, err := eventloop.New(eventloop.DefaultConfig(), eventloop.Deps{Committer: vswitchStandInCommitter{}})
	if err != nil {
		t.Fatal(err)
	}
	loop.Start()
	t.Cleanup(func() { loop.Close() })
	if err := loop.Resync(t.Context()); err != nil {
		t.Fatalf("resync: %v", err)
	}

	socket := filepath.Join(t.TempDir(), "api.sock")
	srv, err := server.Start(server.Config{SocketPath: socket},
		server.NewService(devicemanagerstandin.New(), LoopHistory(loop), 0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	client := memifv1.NewMemifAgentClient(conn)

	for _, tc := range []struct {
		name     string
		req      *memifv1.GetEventHistoryRequest
		wantSeqs []uint64
	}{
		{"startup and requested resync", &memifv1.GetEventHistoryRequest{}, []uint64{1, 2}},
		{"since the startup resync", &memifv1.GetEventHistoryRequest{SinceSeq: 1}, []uint64{2}},
		{"last one", &memifv1.GetEventHistoryRequest{Last: 1}, []uint64{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := client.GetEventHistory(t.Context(), tc.req)
			if err != nil {
				t.Fatalf("GetEventHistory: %v", err)
			}
			if len(resp.Events) != len(tc.wantSeqs) {
				t.Fatalf("got %d events (%v), want seqs %v", len(resp.Events), resp.Events, tc.wantSeqs)
			}
			for i, event := range resp.Events {
				if event.Seq != tc.wantSeqs[i] || event.Method != "full-resync" || event.Error != "" || event.StartedAt == nil {
					t.Errorf("event %d = %v, want successful full resync seq %d", i, event, tc.wantSeqs[i])
				}
			}
		})
	}
}
