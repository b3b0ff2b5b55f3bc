package ctl

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/trit-iot/trit/inference"
)

// modelFile is the on-disk form of a trained model that `tritctl train`
// writes and `tritctl eval` reads.
type modelFile struct {
	Format string               `json:"format"`
	Spec   *inference.ModelSpec `json:"spec"`
}

const modelFormat = "trit-model-json/1"

// writeModel saves spec to path and returns the number of bytes written.
func writeModel(path string, spec *inference.ModelSpec) (int, error) {
	b, err := json.Marshal(modelFile{Format: modelFormat, Spec: spec})
	if err != nil {
		return 0, err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return 0, err
	}
	return len(b), nil
}

// readModelSized loads and validates the model at path and returns it with
// the file's size in bytes.
func readModelSized(path string) (*inference.Model, int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	m, err := decodeModel(path, b)
	return m, len(b), err
}

func decodeModel(path string, b []byte) (*inference.Model, error) {
	var f modelFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: not a trit model file: %w", path, err)
	}
	if f.Format != modelFormat || f.Spec == nil {
		return nil, fmt.Errorf("%s: not a trit model file (format %q)", path, f.Format)
	}
	m, err := inference.New(f.Spec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}
