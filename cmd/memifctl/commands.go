package main

import (
	"context"
	"fmt"
	"io"
	"math"

	memifv1 "github.com/contivpp/memif-agent/api/memif/v1"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

func listCommand(ctx context.Context, c *client, _ []string, opts options, out io.Writer) error {
	resp, err := c.ListAllocations(ctx, &memifv1.ListAllocationsRequest{IncludeSecrets: opts.showSecrets})
	if err != nil {
		return explainStatus("list allocations", err)
	}
	if opts.output == "json" {
		return writeJSONList(out, resp.GetAllocations())
	}
	return writeAllocationTable(out, resp.GetAllocations(), opts.showSecrets)
}

func getCommand(ctx context.Context, c *client, args []string, opts options, out io.Writer) error {
	pod, err := podapi.ParsePodID(args[0])
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	resp, err := c.GetPodMemifs(ctx, &memifv1.GetPodMemifsRequest{
		Namespace:      pod.Namespace,
		Name:           pod.Name,
		IncludeSecrets: opts.showSecrets,
	})
	if err != nil {
		return explainStatus("get memifs of pod "+pod.String(), err)
	}
	if opts.output == "json" {
		return writeJSONList(out, resp.GetMemifs())
	}
	return writePodMemifTable(out, resp.GetMemifs(), opts.showSecrets)
}

// watchCommand prints changes until the user interrupts it (exit 0) or
// the agent ends the stream (an error).
func watchCommand(ctx context.Context, c *client, _ []string, opts options, out io.Writer) error {
	stream, err := c.WatchAllocations(ctx, &memifv1.WatchAllocationsRequest{IncludeSecrets: opts.showSecrets})
	if err != nil {
		return explainStatus("watch allocations", err)
	}
	write := writeChangeJSON
	if opts.output == "table" {
		if err := writeChangeHeader(out); err != nil {
			return err
		}
		write = writeChangeRow
	}
	for {
		change, err := stream.Recv()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return explainStatus("watch allocations", err)
		}
		if err := write(out, change); err != nil {
			return err
		}
	}
}

func eventsCommand(ctx context.Context, c *client, _ []string, opts options, out io.Writer) error {
	resp, err := c.GetEventHistory(ctx, &memifv1.GetEventHistoryRequest{SinceSeq: opts.sinceSeq, Last: uint32(min(opts.last, math.MaxUint32))})
	if err != nil {
		return explainStatus("get event history", err)
	}
	if opts.output == "json" {
		return writeJSONList(out, resp.GetEvents())
	}
	return writeEventTable(out, resp.GetEvents())
}
