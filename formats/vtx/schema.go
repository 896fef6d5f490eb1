// This file reads the schema JSON embedded in a VTX header and uses it to
// name the property slots of entities, the way the SDK's SchemaRegistry
// does: a struct's type id is its position in "property_mapping", and a
// field's slot index is a running count per (type, container) within its
// struct, in declaration order.

package vtx

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Kind is one property slot kind of a PropertyContainer.
type Kind uint8

// The slot kinds, named after the PropertyContainer fields.
const (
	KindNone Kind = iota
	KindBool
	KindInt32
	KindInt64
	KindFloat
	KindDouble
	KindString
	KindTransform
	KindVector
	KindQuat
	KindRange
	KindStruct
	KindByteArray
	KindInt32Array
	KindInt64Array
	KindFloatArray
	KindDoubleArray
	KindVectorArray
	KindQuatArray
	KindTransformArray
	KindRangeArray
	KindBoolArray
	KindStringArray
	KindStructArray
	KindMap
	numKinds
)

var kindNames = [numKinds]string{"none", "bool", "int32", "int64", "float", "double", "string",
	"transform", "vector", "quat", "range", "struct", "bytes[]", "int32[]", "int64[]", "float[]",
	"double[]", "vector[]", "quat[]", "transform[]", "range[]", "bool[]", "string[]", "struct[]", "map"}

// String returns the kind's short name.
func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Field is one schema field and the slot it lives in.
type Field struct {
	Name       string
	Type       string // typeId as written ("Float", "Vector", ...)
	Container  string // "None", "Array" or "Map"
	StructType string // for Struct fields
	Kind       Kind
	Index      int
}

// Struct is one schema struct (entity type).
type Struct struct {
	Name   string
	TypeID int
	Fields []Field
	// names[kind][index] is the field name of that slot.
	names [numKinds][]string
	// nameField is the index in Strings of a field called "Name", or -1.
	nameField int
}

// Schema is the parsed schema JSON of a file.
type Schema struct {
	Version string
	Buckets []string
	Structs []Struct
	byName  map[string]int
}

type schemaJSON struct {
	Version         string   `json:"version"`
	Buckets         []string `json:"buckets"`
	PropertyMapping []struct {
		Struct string `json:"struct"`
		Values []struct {
			Name          string `json:"name"`
			StructType    string `json:"structType"`
			TypeID        string `json:"typeId"`
			ContainerType string `json:"containerType"`
		} `json:"values"`
	} `json:"property_mapping"`
}

// fieldType folds the SDK's type names to its FieldType enum names.
func fieldType(s string) string {
	switch strings.ToLower(s) {
	case "int8", "uint8":
		return "int8"
	case "int32", "uint32", "int":
		return "int32"
	case "int64", "uint64", "long":
		return "int64"
	case "floatrange", "range":
		return "range"
	case "", "none":
		return "none"
	}
	return strings.ToLower(s)
}

// slotKind returns the PropertyContainer slot of a field type in a
// container ("none", "array", "map").
func slotKind(typ, container string) Kind {
	switch strings.ToLower(container) {
	case "map":
		return KindMap
	case "array":
		switch typ {
		case "int8":
			return KindByteArray
		case "int32", "enum":
			return KindInt32Array
		case "int64":
			return KindInt64Array
		case "float":
			return KindFloatArray
		case "double":
			return KindDoubleArray
		case "bool":
			return KindBoolArray
		case "string":
			return KindStringArray
		case "vector":
			return KindVectorArray
		case "quat":
			return KindQuatArray
		case "transform":
			return KindTransformArray
		case "range":
			return KindRangeArray
		case "struct":
			return KindStructArray
		}
		return KindNone
	}
	switch typ {
	case "int8", "int32", "enum":
		return KindInt32
	case "int64":
		return KindInt64
	case "float":
		return KindFloat
	case "double":
		return KindDouble
	case "bool":
		return KindBool
	case "string":
		return KindString
	case "vector":
		return KindVector
	case "quat":
		return KindQuat
	case "transform":
		return KindTransform
	case "range":
		return KindRange
	case "struct":
		return KindStruct
	}
	return KindNone
}

// ParseSchema parses the schema JSON of a header. An empty string gives an
// empty schema.
func ParseSchema(text string) (*Schema, error) {
	s := &Schema{byName: map[string]int{}}
	if strings.TrimSpace(text) == "" {
		return s, nil
	}
	var sj schemaJSON
	if err := json.Unmarshal([]byte(text), &sj); err != nil {
		return nil, fmt.Errorf("vtx: schema JSON: %w", err)
	}
	s.Version, s.Buckets = sj.Version, sj.Buckets
	for _, pm := range sj.PropertyMapping {
		if pm.Struct == "" {
			continue // the SDK skips these without giving them a type id
		}
		st := Struct{Name: pm.Struct, TypeID: len(s.Structs), nameField: -1}
		counters := map[[2]string]int{}
		for _, v := range pm.Values {
			typ := fieldType(v.TypeID)
			cont := strings.ToLower(v.ContainerType)
			if cont == "" {
				cont = "none"
			}
			key := [2]string{typ, cont}
			f := Field{Name: v.Name, Type: v.TypeID, Container: v.ContainerType, StructType: v.StructType,
				Kind: slotKind(typ, cont), Index: counters[key]}
			counters[key]++
			st.Fields = append(st.Fields, f)
			if f.Kind == KindNone || f.Index > 1<<16 {
				continue
			}
			names := st.names[f.Kind]
			for len(names) <= f.Index {
				names = append(names, "")
			}
			if names[f.Index] == "" { // first name wins where types share a slot
				names[f.Index] = f.Name
			}
			st.names[f.Kind] = names
			if f.Kind == KindString && st.nameField < 0 && strings.EqualFold(f.Name, "name") {
				st.nameField = f.Index
			}
		}
		s.byName[st.Name] = st.TypeID
		s.Structs = append(s.Structs, st)
	}
	return s, nil
}

// Struct returns the struct of a type id, or nil.
func (s *Schema) Struct(typeID int32) *Struct {
	if typeID < 0 || int(typeID) >= len(s.Structs) {
		return nil
	}
	return &s.Structs[typeID]
}

// TypeName returns the struct name of a type id, or "type N".
func (s *Schema) TypeName(typeID int32) string {
	if st := s.Struct(typeID); st != nil {
		return st.Name
	}
	return fmt.Sprintf("type %d", typeID)
}

// SlotName returns the field name of slot index of kind in struct st
// (which may be nil), or "kind[index]" when the schema does not name it.
func (st *Struct) SlotName(k Kind, index int) string {
	if st != nil && k < numKinds && index < len(st.names[k]) && st.names[k][index] != "" {
		return st.names[k][index]
	}
	return fmt.Sprintf("%s[%d]", k, index)
}

// DisplayName returns the entity's "Name" string property where the schema
// has one and the entity sets it.
func (st *Struct) DisplayName(p *PropertyContainer) string {
	if st == nil || st.nameField < 0 || st.nameField >= len(p.Strings) {
		return ""
	}
	return p.Strings[st.nameField]
}

// nameSlot returns the Strings index of the struct's "Name" field, or -1.
func (st *Struct) nameSlot() int {
	if st == nil {
		return -1
	}
	return st.nameField
}

// BucketName returns the schema's name of bucket i, or "".
func (s *Schema) BucketName(i int) string {
	if i < len(s.Buckets) {
		return s.Buckets[i]
	}
	return ""
}
