// This file holds the float32 vector and quaternion arithmetic of
// System.Numerics as the reference writer and reader use it, operation by
// operation (every product and sum rounded to float32, in C#'s evaluation
// order), plus the smallest-three quaternion packing.

package butter

import "math"

type vec3 struct{ X, Y, Z float32 }

type quat struct{ X, Y, Z, W float32 }

var quatIdentity = quat{0, 0, 0, 1}

// f32 rounds to float32 explicitly, which also keeps the compiler from
// fusing a multiply and an add.
func f32(x float32) float32 { return x }

func (a vec3) add(b vec3) vec3 { return vec3{a.X + b.X, a.Y + b.Y, a.Z + b.Z} }
func (a vec3) sub(b vec3) vec3 { return vec3{a.X - b.X, a.Y - b.Y, a.Z - b.Z} }

func (a vec3) lengthSquared() float32 {
	return f32(f32(f32(a.X*a.X)+f32(a.Y*a.Y)) + f32(a.Z*a.Z))
}

func (a vec3) length() float32 {
	return float32(math.Sqrt(float64(a.lengthSquared())))
}

func (a vec3) div(s float32) vec3 { return vec3{a.X / s, a.Y / s, a.Z / s} }

func (a vec3) normalize() vec3 { return a.div(a.length()) }

func cross(a, b vec3) vec3 {
	return vec3{
		f32(a.Y*b.Z) - f32(a.Z*b.Y),
		f32(a.Z*b.X) - f32(a.X*b.Z),
		f32(a.X*b.Y) - f32(a.Y*b.X),
	}
}

func vecOf(l []float32) vec3 {
	if len(l) < 3 {
		return vec3{}
	}
	return vec3{l[0], l[1], l[2]}
}

func (a vec3) list() []float32 { return []float32{a.X, a.Y, a.Z} }

// lookRotation is EchoVRAPI's Math2.QuaternionLookRotation (non-Unity).
func lookRotation(forward, up vec3) quat {
	forward = forward.div(forward.length())
	v := forward.normalize()
	v2 := cross(up, v).normalize()
	v3 := cross(v, v2)
	m00, m01, m02 := v2.X, v2.Y, v2.Z
	m10, m11, m12 := v3.X, v3.Y, v3.Z
	m20, m21, m22 := v.X, v.Y, v.Z
	var q quat
	num8 := f32(m00+m11) + m22
	if num8 > 0 {
		num := float32(math.Sqrt(float64(num8 + 1)))
		q.W = num * 0.5
		num = 0.5 / num
		q.X = f32(m12-m21) * num
		q.Y = f32(m20-m02) * num
		q.Z = f32(m01-m10) * num
		return q
	}
	if m00 >= m11 && m00 >= m22 {
		num7 := float32(math.Sqrt(float64(f32(f32(1+m00)-m11) - m22)))
		num4 := 0.5 / num7
		q.X = 0.5 * num7
		q.Y = f32(m01+m10) * num4
		q.Z = f32(m02+m20) * num4
		q.W = f32(m12-m21) * num4
		return q
	}
	if m11 > m22 {
		num6 := float32(math.Sqrt(float64(f32(f32(1+m11)-m00) - m22)))
		num3 := 0.5 / num6
		q.X = f32(m10+m01) * num3
		q.Y = 0.5 * num6
		q.Z = f32(m21+m12) * num3
		q.W = f32(m20-m02) * num3
		return q
	}
	num5 := float32(math.Sqrt(float64(f32(f32(1+m22)-m00) - m11)))
	num2 := 0.5 / num5
	q.X = f32(m20+m02) * num2
	q.Y = f32(m21+m12) * num2
	q.Z = 0.5 * num5
	q.W = f32(m01-m10) * num2
	return q
}

// forward, up and left are EchoVRAPI's Vector3Extensions on a quaternion.
func (q quat) forward() vec3 {
	return vec3{
		2 * f32(f32(q.X*q.Z)+f32(q.W*q.Y)),
		2 * f32(f32(q.Y*q.Z)-f32(q.W*q.X)),
		1 - 2*f32(f32(q.X*q.X)+f32(q.Y*q.Y)),
	}
}

func (q quat) up() vec3 {
	return vec3{
		2 * f32(f32(q.X*q.Y)-f32(q.W*q.Z)),
		1 - 2*f32(f32(q.X*q.X)+f32(q.Z*q.Z)),
		2 * f32(f32(q.Y*q.Z)+f32(q.W*q.X)),
	}
}

func (q quat) left() vec3 { return cross(q.up(), q.forward()) }

// mul is System.Numerics Quaternion.Multiply(a, b).
func (a quat) mul(b quat) quat {
	cx := f32(a.Y*b.Z) - f32(a.Z*b.Y)
	cy := f32(a.Z*b.X) - f32(a.X*b.Z)
	cz := f32(a.X*b.Y) - f32(a.Y*b.X)
	dot := f32(f32(f32(a.X*b.X)+f32(a.Y*b.Y)) + f32(a.Z*b.Z))
	return quat{
		f32(f32(a.X*b.W)+f32(b.X*a.W)) + cx,
		f32(f32(a.Y*b.W)+f32(b.Y*a.W)) + cy,
		f32(f32(a.Z*b.W)+f32(b.Z*a.W)) + cz,
		f32(a.W*b.W) - dot,
	}
}

func (a quat) inverse() quat {
	ls := f32(f32(f32(f32(a.X*a.X)+f32(a.Y*a.Y))+f32(a.Z*a.Z)) + f32(a.W*a.W))
	inv := 1 / ls
	return quat{f32(-a.X) * inv, f32(-a.Y) * inv, f32(-a.Z) * inv, a.W * inv}
}

func (a quat) dot(b quat) float32 {
	return f32(f32(f32(f32(a.X*b.X)+f32(a.Y*b.Y))+f32(a.Z*b.Z)) + f32(a.W*b.W))
}

// angleDeg is ButterReplays' UniversalUnityExtensions.QuaternionAngle.
func angleDeg(a, b quat) float32 {
	num := a.dot(b)
	if float64(num) > 0.999998986721039 {
		return 0
	}
	x := float32(math.Abs(float64(num)))
	if x > 1 {
		x = 1
	}
	ac := float32(math.Acos(float64(x)))
	return float32(float64(ac) * 2.0 * 57.2957801818848)
}

// dotnetToUint16 converts a double to ushort the way .NET does on x86-64:
// through a saturating int32 conversion, keeping the low 16 bits.
func dotnetToUint16(d float64) uint16 {
	return uint16(dotnetToInt32(d))
}

func dotnetToInt32(d float64) int32 {
	if d != d || d >= 2147483648.0 || d <= -2147483649.0 {
		return math.MinInt32
	}
	return int32(d)
}

// smallestThree packs q into 32 bits: the index of the largest component
// in bits 0-1, then the other three as 10-bit values.
func smallestThree(q quat) uint32 {
	c := [4]float32{q.X, q.Y, q.Z, q.W}
	var max float32
	maxIndex := 0
	sign := float32(1)
	for i := 0; i < 4; i++ {
		a := float32(math.Abs(float64(c[i])))
		if a > max {
			max = a
			maxIndex = i
			if c[i] < 0 {
				sign = -1
			} else {
				sign = 1
			}
		}
	}
	data := uint32(maxIndex)
	j := 0
	for i := 0; i < 4; i++ {
		if i == maxIndex {
			continue
		}
		v := dotnetToUint16((float64(c[i]*sign) + 0.70710678) / 1.41421356 * 1023)
		data |= uint32(v) << uint(j*10+2)
		j++
	}
	return data
}

func uncompressST(v uint32) float32 {
	return float32(float64(float32(v)/1023)*1.41421356 - 0.70710678)
}

// readSmallestThree is the reference reader's ReadSmallestThree.
func readSmallestThree(st uint32) quat {
	idx := st & 3
	f1 := uncompressST((st >> 2) & 0x3FF)
	f2 := uncompressST((st >> 12) & 0x3FF)
	f3 := uncompressST((st >> 22) & 0x3FF)
	r := f32(f32(f32(1-f32(f1*f1))-f32(f2*f2)) - f32(f3*f3))
	if r < 0 {
		r = 0 // the reference yields NaN here; JSON cannot carry it
	}
	f4 := float32(math.Sqrt(float64(r)))
	switch idx {
	case 0:
		return quat{f4, f1, f2, f3}
	case 1:
		return quat{f1, f4, f2, f3}
	case 2:
		return quat{f1, f2, f4, f3}
	}
	return quat{f1, f2, f3, f4}
}
