// API tokens: only a hash of each secret is stored.

package archive

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ErrTokenExists is returned when creating a token under a name in use.
var ErrTokenExists = errors.New("a token with that name exists")

// ErrNoToken is returned when revoking a token that does not exist.
var ErrNoToken = errors.New("no token with that name")

// Token is an API token as stored: its name, role and the sha256 of its
// secret. The secret itself is shown once, when it is created, and kept
// nowhere.
type Token struct {
	Name string `json:"name"`
	Role string `json:"role"`
	Hash string `json:"hash"` // hex sha256 of the secret
	// Prefix is the secret's first characters (48 random bits of its 256),
	// which let a server tell a token in use from a guess while it limits
	// guessing; empty for tokens made before it was kept.
	Prefix    string    `json:"prefix,omitempty"`
	Created   time.Time `json:"created"`
	CreatedBy string    `json:"created_by,omitempty"`
}

// PutToken stores a new token; a name in use is refused with ErrTokenExists.
func (a *Archive) PutToken(t Token) error {
	if t.Created.IsZero() {
		t.Created = a.opts.Now().UTC()
	}
	v, err := json.Marshal(t)
	if err != nil {
		return err
	}
	err = a.catalog.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketTokens)
		if err != nil {
			return err
		}
		if b.Get([]byte(t.Name)) != nil {
			return fmt.Errorf("%q: %w", t.Name, ErrTokenExists)
		}
		return b.Put([]byte(t.Name), v)
	})
	if err != nil {
		return fmt.Errorf("archive: token: %w", err)
	}
	return nil
}

// Tokens returns every stored token, by name.
func (a *Archive) Tokens() ([]Token, error) {
	var out []Token
	err := a.catalog.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTokens)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var t Token
			if err := json.Unmarshal(v, &t); err != nil {
				return fmt.Errorf("token %q: %w", k, err)
			}
			out = append(out, t)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("archive: tokens: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// DeleteToken removes the token called name (ErrNoToken if there is none).
func (a *Archive) DeleteToken(name string) error {
	err := a.catalog.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTokens)
		if b == nil || b.Get([]byte(name)) == nil {
			return fmt.Errorf("%q: %w", name, ErrNoToken)
		}
		return b.Delete([]byte(name))
	})
	if err != nil {
		return fmt.Errorf("archive: token: %w", err)
	}
	return nil
}
