// The object-storage tier as the library offers it: configure the bucket,
// move sealed recordings there, and catch up on another node's uploads.

package replay

import (
	"context"
	"errors"
	"fmt"

	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/catalog"
	"github.com/replayarchive/replay/internal/units"
)

// RemoteConfig returns the stored remote store configuration (nil when
// there is none).
func (x *Archive) RemoteConfig() (*archive.RemoteConfig, error) { return x.a.RemoteConfig() }

// SetRemote checks that cfg reaches a bucket and stores it: sealed
// recordings older than cfg.UploadDelay() move there at the next Upload. A
// read-only configuration makes this a second node that only reads what
// another uploads (CatchUp).
func (x *Archive) SetRemote(ctx context.Context, by Actor, cfg archive.RemoteConfig) error {
	if x.opts.ReadOnly {
		return ErrReadOnly
	}
	defer x.change()()
	if err := x.a.SetRemote(ctx, cfg); err != nil {
		return err
	}
	if !cfg.S3.ReadOnly {
		// A node started later on an empty disk finds the bucket.
		if err := x.publish(ctx, catalog.KindSetting, settingRemote, cfg); err != nil {
			return err
		}
	}
	x.audit(archive.AuditEntry{Who: by.Name, Action: archive.AuditRemote, Detail: DescribeRemote(&cfg)})
	return nil
}

// DescribeRemote says in words where and when recordings go.
func DescribeRemote(cfg *archive.RemoteConfig) string {
	if cfg.S3.ReadOnly {
		return fmt.Sprintf("%s at %s, read-only (catches up on another node's uploads)", cfg.URL, cfg.S3.Endpoint)
	}
	after := cfg.UploadDelay()
	when := "older than " + units.FormatDuration(after)
	switch {
	case after == 0:
		when += " (all, as soon as sealed)"
	case cfg.UploadAfter == nil:
		when += " (the default)"
	}
	return fmt.Sprintf("%s at %s, sealed recordings %s move there", cfg.URL, cfg.S3.Endpoint, when)
}

// Upload moves sealed recordings past the upload age to the remote store
// (archive.Archive.Upload). Nothing the index holds changes.
func (x *Archive) Upload(ctx context.Context, by Actor, opts archive.UploadOptions) (*archive.UploadReport, error) {
	if x.opts.ReadOnly {
		return nil, ErrReadOnly
	}
	rep, err := x.a.Upload(ctx, opts)
	if rep != nil && len(rep.Uploaded) > 0 {
		err = errors.Join(err, x.publishUploads(ctx, rep.Uploaded))
	}
	if rep != nil && rep.Recordings > 0 {
		x.audit(archive.AuditEntry{Who: by.Name, Action: archive.AuditUpload,
			Detail: fmt.Sprintf("%d recordings, %s", rep.Recordings, units.FormatBytes(rep.Bytes))})
	}
	return rep, err
}

// CatchUp adds the recordings other nodes uploaded to the bucket since the
// last catch-up, and removes those deleted from it, then brings the search
// index up to date.
func (x *Archive) CatchUp(ctx context.Context) (*archive.CatchUpReport, error) {
	if x.opts.ReadOnly {
		return nil, ErrReadOnly
	}
	rep, err := x.a.CatchUp(ctx)
	if rep != nil && x.shared != nil {
		// Their marks as they are now, not as at their upload.
		err = errors.Join(err, x.applyMarks(ctx, rep.AddedIDs))
	}
	if rep != nil && (rep.Added > 0 || rep.Removed > 0) {
		err = errors.Join(err, x.sync(ctx))
	}
	return rep, err
}
