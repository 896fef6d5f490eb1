// What this archive remembers of the shared catalog it follows (package
// catalog): where it is and how far this archive has applied its changes.

package archive

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// CatalogURL returns the shared catalog this archive follows ("" when it
// stands alone).
func (a *Archive) CatalogURL() (string, error) {
	var url string
	err := a.catalog.View(func(tx *bolt.Tx) error {
		url = string(tx.Bucket(bucketSettings).Get(settingCatalogURL))
		return nil
	})
	return url, err
}

// SetCatalogURL records the shared catalog this archive follows. A new
// catalog starts its changes from the beginning.
func (a *Archive) SetCatalogURL(url string) error {
	err := a.catalog.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSettings)
		if string(b.Get(settingCatalogURL)) == url {
			return nil
		}
		if err := b.Delete(settingCatalogSeq); err != nil {
			return err
		}
		return b.Put(settingCatalogURL, []byte(url))
	})
	if err != nil {
		return fmt.Errorf("archive: shared catalog: %w", err)
	}
	return nil
}

// CatalogSeq returns the sequence number of the last change of the shared
// catalog applied here, and whether any was (false: this archive has not
// yet given the catalog what it held before).
func (a *Archive) CatalogSeq() (seq int64, ok bool, err error) {
	err = a.catalog.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketSettings).Get(settingCatalogSeq)
		if ok = len(v) == 8; ok {
			seq = int64(binary.BigEndian.Uint64(v))
		}
		return nil
	})
	return seq, ok, err
}

// SetCatalogSeq records that the shared catalog's changes up to seq are
// applied here.
func (a *Archive) SetCatalogSeq(seq int64) error {
	err := a.catalog.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSettings).Put(settingCatalogSeq, seqKey(uint64(seq)))
	})
	if err != nil {
		return fmt.Errorf("archive: shared catalog: %w", err)
	}
	return nil
}
