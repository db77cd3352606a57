package store

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// MarshalBSONValue stores Patterns the way upstream does: null when unset,
// a plain string when it was given as one, else an array of strings.
func (p Patterns) MarshalBSONValue() (byte, []byte, error) {
	var v any
	switch {
	case !p.Set:
		return byte(bson.TypeNull), nil, nil
	case p.Single && len(p.Values) == 1:
		v = p.Values[0]
	default:
		v = append([]string{}, p.Values...)
	}
	t, data, err := bson.MarshalValue(v)
	return byte(t), data, err
}

// UnmarshalBSONValue reads null, a string or an array of strings.
func (p *Patterns) UnmarshalBSONValue(typ byte, data []byte) error {
	switch bson.Type(typ) {
	case bson.TypeNull, bson.TypeUndefined:
		*p = Patterns{}
		return nil
	case bson.TypeString:
		var s string
		if err := bson.UnmarshalValue(bson.Type(typ), data, &s); err != nil {
			return fmt.Errorf("decoding patterns: %w", err)
		}
		*p = Patterns{Values: []string{s}, Single: true, Set: true}
		return nil
	case bson.TypeArray:
		var vs []string
		if err := bson.UnmarshalValue(bson.Type(typ), data, &vs); err != nil {
			return fmt.Errorf("decoding patterns: %w", err)
		}
		*p = Patterns{Values: append([]string{}, vs...), Set: true}
		return nil
	}
	return fmt.Errorf("decoding patterns: unexpected BSON type %s", bson.Type(typ))
}

// IsZero lets omitempty drop unset Patterns.
func (p Patterns) IsZero() bool { return !p.Set }
