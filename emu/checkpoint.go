package emu

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"

	"shardlab/mesh"
)

// Checkpoint is a run's complete state after a step: every device's
// parameter shards and Adam moments and the simulated clocks. Resuming
// from it continues bit for bit as if the run had not stopped.
type Checkpoint struct {
	Header  CheckpointHeader
	Step    int
	Devices []DeviceState
}

// CheckpointHeader identifies the run a checkpoint belongs to: every
// setting that changes the run's losses, parameters or simulated times.
// Resuming under any other value would silently give a run that matches
// neither, so restore refuses it.
type CheckpointHeader struct {
	Model        Config `json:"model"`
	Layout       string `json:"layout"`
	Topology     string `json:"topology"`
	GlobalBatch  int    `json:"global_batch"`
	MicroBatches int    `json:"micro_batches"`
	// Schedule is recorded with a pipeline only: without one it changes
	// nothing.
	Schedule string `json:"schedule"`
	// Chunks is recorded with interleaved and circular schedules only
	// (it changes which layers each device holds).
	Chunks          int     `json:"chunks,omitempty"`
	Seed            uint64  `json:"seed"`
	LR              float64 `json:"lr"`
	BF16Compute     bool    `json:"bf16_compute"`
	Efficiency      float64 `json:"efficiency"`
	FreeComm        bool    `json:"free_comm"`
	BlocksOnlyClock bool    `json:"blocks_only_clock"`
	// Data is the data source's Identity (its content, not its path).
	Data string `json:"data"`
	Step int    `json:"step"`
	// Process and Processes place the checkpoint when several processes
	// run a mesh: each writes its own devices.
	Process   int `json:"process"`
	Processes int `json:"processes"`
}

// MismatchError is a checkpoint of another run: the header fields (by
// their JSON names, "model.d_model") whose values differ.
type MismatchError struct {
	Fields []FieldMismatch
}

// FieldMismatch is one differing header field.
type FieldMismatch struct {
	Field      string
	Checkpoint string // the checkpoint's value
	Run        string // this run's
}

func (e *MismatchError) Error() string {
	var parts []string
	for _, f := range e.Fields {
		parts = append(parts, fmt.Sprintf("%s %s, this run %s", f.Field, f.Checkpoint, f.Run))
	}
	return "emu: the checkpoint is of another run: " + strings.Join(parts, "; ")
}

// Unwrap makes a mismatch an ErrCheckpoint.
func (e *MismatchError) Unwrap() error { return ErrCheckpoint }

// diffHeaders lists the fields of two headers that differ, by JSON name,
// descending into nested structs (the model).
func diffHeaders(ck, run CheckpointHeader) []FieldMismatch {
	var out []FieldMismatch
	var walk func(prefix string, a, b reflect.Value)
	walk = func(prefix string, a, b reflect.Value) {
		for i := range a.NumField() {
			name, _, _ := strings.Cut(a.Type().Field(i).Tag.Get("json"), ",")
			fa, fb := a.Field(i), b.Field(i)
			if fa.Kind() == reflect.Struct {
				walk(prefix+name+".", fa, fb)
				continue
			}
			if !fa.Equal(fb) {
				format := "%v"
				if fa.Kind() == reflect.String {
					format = "%q"
				}
				out = append(out, FieldMismatch{Field: prefix + name, Checkpoint: fmt.Sprintf(format, fa.Interface()), Run: fmt.Sprintf(format, fb.Interface())})
			}
		}
	}
	walk("", reflect.ValueOf(ck), reflect.ValueOf(run))
	return out
}

// DeviceState is one device's optimizer state.
type DeviceState struct {
	ID    int
	AdamT int
	Clock float64
	Flat  [][]float32
	M, V  [][]float32
}

func header(tc *TrainConfig, step int) CheckpointHeader {
	h := CheckpointHeader{Model: tc.Model, Layout: tc.Mesh.String(), Topology: tc.Mesh.Multislice.String(), GlobalBatch: tc.GlobalBatch,
		MicroBatches: tc.MicroBatches, Seed: tc.Seed, LR: tc.LR, BF16Compute: tc.BF16Compute, Efficiency: tc.Efficiency,
		FreeComm: tc.FreeComm, BlocksOnlyClock: tc.BlocksOnlyClock, Data: tc.dataID, Step: step, Processes: 1}
	if tc.Mesh.Size(mesh.Pipeline) > 1 {
		h.Schedule = string(tc.Schedule)
	}
	if tc.Schedule.Chunked() {
		h.Chunks = tc.Chunks
	}
	if tc.Remote != nil {
		h.Process, h.Processes = tc.Remote.Rank(), tc.Remote.Size()
	}
	return h
}

func cloneAll(x [][]float32) [][]float32 {
	out := make([][]float32, len(x))
	for i := range x {
		out[i] = append([]float32(nil), x[i]...)
	}
	return out
}

func snapshot(tc *TrainConfig, devs []*device, step int) *Checkpoint {
	c := &Checkpoint{Header: header(tc, step), Step: step}
	for _, d := range devs {
		c.Devices = append(c.Devices, DeviceState{ID: d.id, AdamT: d.adamT, Clock: d.ep.Clock(), Flat: cloneAll(d.flat), M: cloneAll(d.m), V: cloneAll(d.v)})
	}
	return c
}

// ErrCheckpoint is wrapped by every checkpoint that cannot be used.
var ErrCheckpoint = errors.New("unusable checkpoint")

func (c *Checkpoint) restore(tc *TrainConfig, devs []*device) error {
	if diff := diffHeaders(c.Header, header(tc, c.Step)); len(diff) > 0 {
		return &MismatchError{Fields: diff}
	}
	if len(c.Devices) != len(devs) {
		return fmt.Errorf("emu: checkpoint has %d devices, the layout %d: %w", len(c.Devices), len(devs), ErrCheckpoint)
	}
	for i, d := range devs {
		s := c.Devices[i]
		if s.ID != d.id {
			return fmt.Errorf("emu: checkpoint entry %d is device %d, want %d: %w", i, s.ID, d.id, ErrCheckpoint)
		}
		if s.AdamT != c.Step {
			return fmt.Errorf("emu: checkpoint device %d has taken %d Adam steps, want the checkpoint's step %d: %w", s.ID, s.AdamT, c.Step, ErrCheckpoint)
		}
		for _, pair := range []struct{ dst, src [][]float32 }{{d.flat, s.Flat}, {d.m, s.M}, {d.v, s.V}} {
			if len(pair.src) != len(pair.dst) {
				return fmt.Errorf("emu: checkpoint device %d has %d tensors, want %d: %w", i, len(pair.src), len(pair.dst), ErrCheckpoint)
			}
			for gi := range pair.dst {
				if len(pair.src[gi]) != len(pair.dst[gi]) {
					return fmt.Errorf("emu: checkpoint device %d tensor %d has %d values, want %d: %w", i, gi, len(pair.src[gi]), len(pair.dst[gi]), ErrCheckpoint)
				}
				copy(pair.dst[gi], pair.src[gi])
			}
		}
		d.adamT = s.AdamT
		d.ep.SetClock(s.Clock)
	}
	return nil
}

// ckptMagic starts every checkpoint; the number is the format version
// (2: the header records every setting that changes the result; 3: the
// model's keys are model.Spec's, seq_len and tied_embeddings).
const (
	ckptMagic       = "SHARDLAB-CKPT-3\n"
	ckptMagicPrefix = "SHARDLAB-CKPT-"
)

// WriteTo encodes the checkpoint: magic, a JSON header, every device's
// tensors as little-endian float32, and a SHA-256 of all that. It streams
// (one tensor's bytes at a time), so writing costs no copy of the state.
func (c *Checkpoint) WriteTo(w io.Writer) (int64, error) {
	h, err := json.Marshal(c.Header)
	if err != nil {
		return 0, err
	}
	sum := sha256.New()
	cw := &countingWriter{w: io.MultiWriter(w, sum)}
	bw := bufio.NewWriterSize(cw, 1<<16)
	var word [8]byte
	putU64 := func(v uint64) {
		binary.LittleEndian.PutUint64(word[:], v)
		bw.Write(word[:])
	}
	var buf []byte
	bw.WriteString(ckptMagic)
	putU64(uint64(len(h)))
	bw.Write(h)
	putU64(uint64(len(c.Devices)))
	for _, d := range c.Devices {
		putU64(uint64(d.ID))
		putU64(uint64(d.AdamT))
		putU64(math.Float64bits(d.Clock))
		for _, set := range [][][]float32{d.Flat, d.M, d.V} {
			putU64(uint64(len(set)))
			for _, x := range set {
				putU64(uint64(len(x)))
				buf = buf[:0]
				for _, f := range x {
					buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(f))
				}
				bw.Write(buf)
			}
		}
	}
	if err := bw.Flush(); err != nil { // bufio keeps the first error
		return cw.n, err
	}
	// the checksum goes to w alone
	n, err := w.Write(sum.Sum(nil))
	return cw.n + int64(n), err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// maxCheckpointBytes bounds what ReadCheckpoint reads (16 GiB).
const maxCheckpointBytes = 1 << 34

// maxHeaderBytes bounds a checkpoint's JSON header (a few hundred bytes
// in practice).
const maxHeaderBytes = 1 << 20

// ReadCheckpoint decodes and verifies a checkpoint; a truncated or
// corrupted one is refused. It reads the whole file before decoding it;
// ReadCheckpointOf reads a file of known size against the run it is for.
func ReadCheckpoint(r io.Reader) (*Checkpoint, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxCheckpointBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxCheckpointBytes {
		return nil, fmt.Errorf("emu: checkpoint is over %d bytes, the most this reads: %w", maxCheckpointBytes, ErrCheckpoint)
	}
	if err := checkMagic(data); err != nil {
		return nil, err
	}
	if len(data) < len(ckptMagic)+sha256.Size {
		return nil, errNotCheckpoint
	}
	body, sum := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return nil, errChecksum
	}
	body = body[len(ckptMagic):]
	rd := &ckptReader{r: bytes.NewReader(body), left: int64(len(body))}
	c, _, err := rd.head()
	if err != nil {
		return nil, err
	}
	if err := rd.devices(c, nil); err != nil {
		return nil, err
	}
	return c, nil
}

var (
	errNotCheckpoint = fmt.Errorf("emu: not a shardlab checkpoint (or truncated before its header): %w", ErrCheckpoint)
	errChecksum      = fmt.Errorf("emu: checkpoint checksum mismatch (corrupted or truncated): %w", ErrCheckpoint)
)

// checkMagic refuses data that does not start with this format's magic,
// naming another version's.
func checkMagic(data []byte) error {
	if len(data) >= len(ckptMagic) && string(data[:len(ckptMagicPrefix)]) == ckptMagicPrefix && string(data[:len(ckptMagic)]) != ckptMagic {
		return fmt.Errorf("emu: checkpoint format %q, this shardlab reads %q only: %w", strings.TrimSpace(string(data[len(ckptMagicPrefix):len(ckptMagic)])),
			strings.TrimSpace(ckptMagic[len(ckptMagicPrefix):]), ErrCheckpoint)
	}
	if len(data) < len(ckptMagic) || string(data[:len(ckptMagic)]) != ckptMagic {
		return errNotCheckpoint
	}
	return nil
}

// CheckpointShape is what a run's checkpoints hold, known before one is
// read: the run's header (its Step is the checkpoint's, whatever it says
// here) and, for each of this process's devices in order, its id and the
// length of each of its tensors (its parameters', and the same again for
// each Adam moment). ReadCheckpointOf holds a file to it.
type CheckpointShape struct {
	Header  CheckpointHeader
	Devices []DeviceShape
}

// DeviceShape is one device's part of a CheckpointShape.
type DeviceShape struct {
	ID   int
	Lens []int
}

// Size is the bytes WriteTo writes for a checkpoint of this shape whose
// JSON header is headerLen bytes: the magic, the header and its length,
// the device count, each device's id, Adam step and clock, its three sets
// of tensors (a count, then each one's length and values) and the SHA-256.
func (s *CheckpointShape) Size(headerLen int) int64 {
	n := int64(len(ckptMagic)) + 8 + int64(headerLen) + 8 + sha256.Size
	for _, d := range s.Devices {
		set := int64(8)
		for _, l := range d.Lens {
			set += 8 + 4*int64(l)
		}
		n += 3*8 + 3*set
	}
	return n
}

// shapeOf is the shape of the checkpoints devs write under tc.
func shapeOf(tc *TrainConfig, devs []*device) *CheckpointShape {
	s := &CheckpointShape{Header: header(tc, 0)}
	for _, d := range devs {
		ds := DeviceShape{ID: d.id}
		for _, x := range d.flat {
			ds.Lens = append(ds.Lens, len(x))
		}
		s.Devices = append(s.Devices, ds)
	}
	return s
}

// SizeError is a checkpoint whose header is this run's but whose size is
// not what this run's devices write: truncated, extended or corrupted.
type SizeError struct {
	Step       int   // what its header says
	Size, Want int64 // bytes
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("emu: checkpoint of step %d is %d bytes, want %d for this run's devices (truncated, extended or corrupted)", e.Step, e.Size, e.Want)
}

// Unwrap makes it an ErrCheckpoint.
func (e *SizeError) Unwrap() error { return ErrCheckpoint }

// ReadCheckpointOf decodes and verifies a checkpoint of size bytes for the
// run whose checkpoints have shape want. It reads the header first and
// refuses, before reading anything more, one of another run (a
// *MismatchError) or of a size the shape does not give (a *SizeError);
// then it decodes the body as it reads it (no copy of the file is held)
// and checks the checksum at the end. With a nil want it holds the file
// to nothing but its own counts and at most 16 GiB.
func ReadCheckpointOf(r io.Reader, size int64, want *CheckpointShape) (*Checkpoint, error) {
	if want == nil && size > maxCheckpointBytes {
		return nil, fmt.Errorf("emu: checkpoint is %d bytes, over %d, the most this reads: %w", size, int64(maxCheckpointBytes), ErrCheckpoint)
	}
	br := bufio.NewReaderSize(r, 1<<16)
	sum := sha256.New()
	hashed := io.TeeReader(br, sum) // what the checksum covers: all but itself
	magic := make([]byte, len(ckptMagic))
	if _, err := io.ReadFull(hashed, magic); err != nil {
		return nil, errNotCheckpoint
	}
	if err := checkMagic(magic); err != nil {
		return nil, err
	}
	if size < int64(len(ckptMagic)+sha256.Size) {
		return nil, errNotCheckpoint
	}
	rd := &ckptReader{r: hashed, left: size - int64(len(ckptMagic)) - sha256.Size}
	c, headerLen, err := rd.head()
	if err != nil {
		return nil, err
	}
	if want != nil {
		run := want.Header
		run.Step = c.Step
		if diff := diffHeaders(c.Header, run); len(diff) > 0 {
			return nil, &MismatchError{Fields: diff}
		}
		if n := want.Size(headerLen); size != n {
			return nil, &SizeError{Step: c.Step, Size: size, Want: n}
		}
	}
	if err := rd.devices(c, want); err != nil {
		return nil, err
	}
	var got [sha256.Size]byte
	if _, err := io.ReadFull(br, got[:]); err != nil {
		return nil, errCkptShort
	}
	if !bytes.Equal(got[:], sum.Sum(nil)) {
		return nil, errChecksum
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return nil, fmt.Errorf("emu: checkpoint is longer than its %d bytes (it grew while read): %w", size, ErrCheckpoint)
	}
	return c, nil
}

// ckptReader reads a checkpoint's body, every count bounded by the bytes
// left before the checksum.
type ckptReader struct {
	r    io.Reader
	left int64
	buf  []byte // scratch for tensor values
}

var errCkptShort = fmt.Errorf("emu: checkpoint ends early: %w", ErrCheckpoint)

func (rd *ckptReader) read(p []byte) error {
	if int64(len(p)) > rd.left {
		return errCkptShort
	}
	if _, err := io.ReadFull(rd.r, p); err != nil {
		return errCkptShort
	}
	rd.left -= int64(len(p))
	return nil
}

func (rd *ckptReader) u64() (uint64, error) {
	var w [8]byte
	if err := rd.read(w[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(w[:]), nil
}

// count reads a count of things at least least bytes each, refusing one
// that the bytes left cannot hold.
func (rd *ckptReader) count(what string, least uint64) (uint64, error) {
	n, err := rd.u64()
	if err != nil {
		return 0, err
	}
	if left := uint64(rd.left); n > left/least {
		return 0, fmt.Errorf("emu: checkpoint %s is %d, more than the %d bytes left allow: %w", what, n, left, ErrCheckpoint)
	}
	return n, nil
}

// head reads the JSON header and its length, and returns the checkpoint
// it starts and the header's length.
func (rd *ckptReader) head() (*Checkpoint, int, error) {
	n, err := rd.count("header length", 1)
	if err != nil {
		return nil, 0, err
	}
	if n > maxHeaderBytes {
		return nil, 0, fmt.Errorf("emu: checkpoint header length is %d, want at most %d: %w", n, maxHeaderBytes, ErrCheckpoint)
	}
	b := make([]byte, n)
	if err := rd.read(b); err != nil {
		return nil, 0, err
	}
	c := &Checkpoint{}
	if err := json.Unmarshal(b, &c.Header); err != nil {
		return nil, 0, fmt.Errorf("emu: checkpoint header: %v: %w", err, ErrCheckpoint)
	}
	c.Step = c.Header.Step
	if c.Step < 0 {
		return nil, 0, fmt.Errorf("emu: checkpoint step %d, want at least 0: %w", c.Step, ErrCheckpoint)
	}
	return c, int(n), nil
}

// devices reads the device count and every device into c, each tensor's
// length held to want's when it is given, and refuses bytes left over.
func (rd *ckptReader) devices(c *Checkpoint, want *CheckpointShape) error {
	// a device is at least six words (id, Adam step, clock, three counts)
	nd, err := rd.count("device count", 6*8)
	if err != nil {
		return err
	}
	if want != nil && nd != uint64(len(want.Devices)) {
		return fmt.Errorf("emu: checkpoint has %d devices, want %d: %w", nd, len(want.Devices), ErrCheckpoint)
	}
	c.Devices = make([]DeviceState, 0, nd)
	for i := range nd {
		var lens []int
		if want != nil {
			lens = want.Devices[i].Lens
		}
		s, err := rd.device(lens)
		if err != nil {
			return err
		}
		c.Devices = append(c.Devices, s)
	}
	if rd.left != 0 {
		return fmt.Errorf("emu: checkpoint has %d trailing bytes: %w", rd.left, ErrCheckpoint)
	}
	return nil
}

// device reads one device's id, Adam step, clock and tensors.
func (rd *ckptReader) device(lens []int) (DeviceState, error) {
	var s DeviceState
	var w [3]uint64
	for i := range w {
		var err error
		if w[i], err = rd.u64(); err != nil {
			return s, err
		}
	}
	id, t := w[0], w[1]
	if id > 1<<20 || t > 1<<40 {
		return s, fmt.Errorf("emu: checkpoint device %d at Adam step %d, want at most %d and %d: %w", id, t, 1<<20, 1<<40, ErrCheckpoint)
	}
	s.ID, s.AdamT, s.Clock = int(id), int(t), math.Float64frombits(w[2])
	if !(s.Clock >= 0) || math.IsInf(s.Clock, 0) {
		return s, fmt.Errorf("emu: checkpoint device %d has clock %v, want a finite time: %w", id, s.Clock, ErrCheckpoint)
	}
	for _, set := range []*[][]float32{&s.Flat, &s.M, &s.V} {
		var err error
		if *set, err = rd.tensors(s.ID, lens); err != nil {
			return s, err
		}
	}
	return s, nil
}

// tensors reads a count of tensors (each at least its length word), then
// each one's length and little-endian float32 values; with lens, the
// count and lengths must be those.
func (rd *ckptReader) tensors(id int, lens []int) ([][]float32, error) {
	k, err := rd.count("tensor count", 8)
	if err != nil {
		return nil, err
	}
	if lens != nil && k != uint64(len(lens)) {
		return nil, fmt.Errorf("emu: checkpoint device %d has %d tensors, want %d: %w", id, k, len(lens), ErrCheckpoint)
	}
	out := make([][]float32, 0, k)
	for i := range k {
		l, err := rd.count("tensor length", 4)
		if err != nil {
			return nil, err
		}
		if lens != nil && l != uint64(lens[i]) {
			return nil, fmt.Errorf("emu: checkpoint device %d tensor %d has %d values, want %d: %w", id, i, l, lens[i], ErrCheckpoint)
		}
		x := make([]float32, l)
		for off := 0; off < len(x); {
			n := min(len(x)-off, 1<<14)
			if cap(rd.buf) < 4*n {
				rd.buf = make([]byte, 4<<14)
			}
			b := rd.buf[:4*n]
			if err := rd.read(b); err != nil {
				return nil, err
			}
			for j := range n {
				x[off+j] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*j:]))
			}
			off += n
		}
		out = append(out, x)
	}
	return out, nil
}
