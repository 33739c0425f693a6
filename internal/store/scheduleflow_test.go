package store

import "testing"

// TestFlowTemplateKeepsStepGroupKey: a flow schedule's template (JSON) keeps each step's
// group key, so the flows it starts put their step tasks in those groups.
func TestFlowTemplateKeepsStepGroupKey(t *testing.T) {
	p := &FlowParams{Queue: "q", Steps: []StepParams{
		{Name: "a", Kind: "k", GroupKey: "tenant-1"},
		{Name: "b", Kind: "k", DependsOn: []string{"a"}},
	}}
	raw, err := EncodeFlowTemplate(p)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeFlowTemplate(raw)
	if err != nil {
		t.Fatal(err)
	}
	if back.Steps[0].GroupKey != "tenant-1" || back.Steps[1].GroupKey != "" {
		t.Fatalf("decoded steps %+v from %s", back.Steps, raw)
	}
	if c := CloneFlowParams(p); c.Steps[0].GroupKey != "tenant-1" {
		t.Fatalf("cloned step a %+v", c.Steps[0])
	}
}
