// This file holds the tile map and a small DDNet-like character core:
// default tuning values per tick, box collision against tiles, jumps, the
// hook, freeze and death tiles. It is not DDNet's physics, only close
// enough that positions move the way recorded tees move.

package ddnetsim

import (
	"math"
	"math/rand/v2"
)

const (
	tileAir uint8 = iota
	tileSolid
	tileNoHook
	tileFreeze
	tileDeath
)

// DDNet's default tuning, per tick (values of the tuning table divided by
// the tick rate where they are per second).
const (
	gravity        = 0.5
	groundSpeed    = 10.0
	groundAccel    = 2.0
	groundFriction = 0.5
	airSpeed       = 5.0
	airAccel       = 1.5
	airFriction    = 0.95
	jumpGround     = 13.2
	jumpAir        = 12.0
	hookLength     = 380.0
	hookFireSpeed  = 80.0
	hookDragAccel  = 3.0
	hookDragSpeed  = 15.0
	physHalf       = 14.0
	tileSize       = 32.0
	freezeTicks    = 150
)

type world struct {
	w, h    int
	t       []uint8
	spawns  [][2]float64
	startX  float64 // race start line
	finishX float64 // race finish line
	race    bool
}

func (m *world) tile(tx, ty int) uint8 {
	if tx < 0 || tx >= m.w || ty < 0 {
		return tileSolid
	}
	if ty >= m.h {
		return tileDeath
	}
	return m.t[ty*m.w+tx]
}

func (m *world) at(x, y float64) uint8 {
	return m.tile(int(math.Floor(x/tileSize)), int(math.Floor(y/tileSize)))
}

func (m *world) solid(x, y float64) bool {
	t := m.at(x, y)
	return t == tileSolid || t == tileNoHook
}

func (m *world) boxHits(x, y float64) bool {
	return m.solid(x-physHalf, y-physHalf) || m.solid(x+physHalf, y-physHalf) ||
		m.solid(x-physHalf, y+physHalf) || m.solid(x+physHalf, y+physHalf)
}

// genWorld builds a map: for a race a long course of floors at varying
// heights with freeze pits, walls to jump or hook over and a hookable
// ceiling; for an arena a small closed room with platforms.
func genWorld(r *rand.Rand, race bool) *world {
	m := &world{race: race}
	if race {
		m.w, m.h = 250+r.IntN(900), 40+r.IntN(30)
	} else {
		m.w, m.h = 50+r.IntN(60), 30+r.IntN(15)
	}
	m.t = make([]uint8, m.w*m.h)
	set := func(x, y int, v uint8) {
		if x >= 0 && x < m.w && y >= 0 && y < m.h {
			m.t[y*m.w+x] = v
		}
	}
	floor := m.h - 8
	ceil := 4 + r.IntN(6)
	for x := 0; x < m.w; x++ {
		if x%6 == 0 && x > 10 && x < m.w-10 {
			switch r.IntN(7) {
			case 0:
				floor -= 1 + r.IntN(3)
			case 1:
				floor += 1 + r.IntN(3)
			case 2:
				ceil += r.IntN(3) - 1
			}
		}
		floor = min(max(floor, ceil+8), m.h-3)
		ceil = min(max(ceil, 2), floor-8)
		for y := 0; y < m.h; y++ {
			switch {
			case y <= ceil:
				v := tileSolid
				if y == ceil && r.IntN(9) == 0 {
					v = tileNoHook
				}
				set(x, y, v)
			case y >= floor:
				set(x, y, tileSolid)
			}
		}
	}
	if race {
		// Freeze pits and walls along the course, none near the start.
		for x := 20; x < m.w-20; x += 8 + r.IntN(25) {
			switch r.IntN(3) {
			case 0: // a pit with freeze at its bottom
				wd := 2 + r.IntN(4)
				for i := 0; i < wd; i++ {
					fy := m.floorAt(x + i)
					for y := fy; y < m.h; y++ {
						set(x+i, y, tileAir)
					}
					set(x+i, m.h-2, tileFreeze)
					set(x+i, m.h-1, tileSolid)
				}
			case 1: // a wall of 2-4 tiles
				fy := m.floorAt(x)
				for y := fy - 2 - r.IntN(3); y < fy; y++ {
					set(x, y, tileSolid)
				}
			default: // a freeze strip on the floor
				fy := m.floorAt(x)
				for i := 0; i < 1+r.IntN(3); i++ {
					set(x+i, fy-1, tileFreeze)
				}
			}
		}
		if r.IntN(3) == 0 { // a death pit somewhere
			x := 30 + r.IntN(m.w-60)
			for y := m.floorAt(x); y < m.h; y++ {
				set(x, y, tileDeath)
			}
		}
		m.startX, m.finishX = 8*tileSize, float64(m.w-8)*tileSize
		m.spawns = [][2]float64{{4*tileSize + 16, float64(m.floorAt(4))*tileSize - 16}}
	} else {
		for i := 0; i < 4+r.IntN(6); i++ {
			x, y := 3+r.IntN(m.w-10), ceil+4+r.IntN(max(1, m.floorAt(0)-ceil-6))
			for j := 0; j < 3+r.IntN(6); j++ {
				set(x+j, y, tileSolid)
			}
		}
		for i := 0; i < 2+r.IntN(6); i++ {
			x := 2 + r.IntN(m.w-4)
			m.spawns = append(m.spawns, [2]float64{float64(x)*tileSize + 16, float64(m.floorAt(x))*tileSize - 16})
		}
	}
	for x := 0; x < m.w; x++ { // side walls
		for y := 0; y < m.h; y++ {
			if x < 2 || x >= m.w-2 {
				set(x, y, tileSolid)
			}
		}
	}
	return m
}

// floorAt returns the first solid tile row below the ceiling in column x.
func (m *world) floorAt(x int) int {
	y := 0
	for y < m.h && m.tile(x, y) != tileAir {
		y++
	}
	for y < m.h && m.tile(x, y) == tileAir {
		y++
	}
	return y
}

// core is a character's physical state.
type core struct {
	x, y, vx, vy float64
	jumped       int // bit 0: jump held since last press, bit 1: air jump used
	hookState    int // 0 idle, 1 flying, 2 grabbed, -1 retracted (until release)
	hx, hy       float64
	hdx, hdy     float64
	hookTicks    int
	frozen       int
	grounded     bool
}

// step advances the core one tick with input (dir, jump, hook held, aim).
// It returns the tile under the tee's centre afterwards.
func (c *core) step(m *world, dir int32, jump, hook bool, ax, ay float64) uint8 {
	c.grounded = m.solid(c.x-physHalf, c.y+physHalf+5) || m.solid(c.x+physHalf, c.y+physHalf+5)
	if c.frozen > 0 {
		c.frozen--
		dir, jump, hook = 0, false, false
	}
	c.vy += gravity
	accel, speed, fric := airAccel, airSpeed, airFriction
	if c.grounded {
		accel, speed, fric = groundAccel, groundSpeed, groundFriction
	}
	if jump {
		if c.jumped&1 == 0 {
			if c.grounded {
				c.vy = -jumpGround
			} else if c.jumped&2 == 0 {
				c.vy = -jumpAir
				c.jumped |= 2
			}
		}
		c.jumped |= 1
	} else {
		c.jumped &^= 1
	}
	if c.grounded {
		c.jumped &^= 2
	}
	switch {
	case dir < 0:
		c.vx = saturate(c.vx, -speed, -accel)
	case dir > 0:
		c.vx = saturate(c.vx, speed, accel)
	default:
		c.vx *= fric
	}
	c.hookStep(m, hook, ax, ay)
	c.vx = clamp(c.vx, -40, 40)
	c.vy = clamp(c.vy, -40, 40)
	ox, oy := c.x, c.y
	c.move(m)
	// DDNet quantizes the core every tick: positions to whole units,
	// velocities to 1/256. Rounding must not put the box into a wall.
	if rx, ry := math.Round(c.x), math.Round(c.y); !m.boxHits(rx, ry) {
		c.x, c.y = rx, ry
	} else if tx, ty := math.Trunc(c.x), math.Trunc(c.y); !m.boxHits(tx, ty) {
		c.x, c.y = tx, ty
	} else {
		c.x, c.y = ox, oy
	}
	c.vx, c.vy = math.Round(c.vx*256)/256, math.Round(c.vy*256)/256
	t := m.at(c.x, c.y)
	if t == tileFreeze {
		c.frozen = freezeTicks
		c.hookState = 0
	}
	return t
}

func (c *core) hookStep(m *world, hook bool, ax, ay float64) {
	if !hook {
		c.hookState = 0
		return
	}
	switch c.hookState {
	case 0:
		l := math.Hypot(ax, ay)
		if l == 0 {
			ax, l = 1, 1
		}
		c.hdx, c.hdy = ax/l, ay/l
		c.hx, c.hy = c.x+c.hdx*physHalf*1.5, c.y+c.hdy*physHalf*1.5
		c.hookState, c.hookTicks = 1, 0
	case 1:
		for i := 0; i < 5; i++ {
			c.hx += c.hdx * hookFireSpeed / 5
			c.hy += c.hdy * hookFireSpeed / 5
			t := m.at(c.hx, c.hy)
			if t == tileSolid {
				c.hookState = 2
				break
			}
			if t == tileNoHook || math.Hypot(c.hx-c.x, c.hy-c.y) > hookLength {
				c.hookState = -1
				break
			}
		}
	case 2:
		c.hookTicks++
		if c.hookTicks > 62 { // hook_duration 1.25 s
			c.hookState = -1
			return
		}
		dx, dy := c.hx-c.x, c.hy-c.y
		d := math.Hypot(dx, dy)
		if d > 46 {
			nvx, nvy := c.vx+dx/d*hookDragAccel, c.vy+dy/d*hookDragAccel*1.5
			if math.Abs(nvx) <= hookDragSpeed || math.Abs(nvx) < math.Abs(c.vx) {
				c.vx = nvx
			}
			if math.Abs(nvy) <= hookDragSpeed || math.Abs(nvy) < math.Abs(c.vy) {
				c.vy = nvy
			}
		}
	}
}

// move moves the box by its velocity, stopping at the first solid tile on
// each axis (in whole-unit steps once a collision is near).
func (c *core) move(m *world) {
	if nx := c.x + c.vx; !m.boxHits(nx, c.y) {
		c.x = nx
	} else {
		s := math.Copysign(1, c.vx)
		for i := 0; i < int(math.Abs(c.vx)) && !m.boxHits(c.x+s, c.y); i++ {
			c.x += s
		}
		c.vx = 0
	}
	if ny := c.y + c.vy; !m.boxHits(c.x, ny) {
		c.y = ny
	} else {
		s := math.Copysign(1, c.vy)
		for i := 0; i < int(math.Abs(c.vy)) && !m.boxHits(c.x, c.y+s); i++ {
			c.y += s
		}
		c.vy = 0
	}
}

func saturate(v, max, accel float64) float64 {
	if max > 0 {
		if v < max {
			return math.Min(v+accel, max)
		}
		return v
	}
	if v > max {
		return math.Max(v+accel, max)
	}
	return v
}

func clamp(v, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, v)) }
