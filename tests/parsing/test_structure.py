"""Structural parsing: symbols and chunks for every language, `ast` agreement, malformed input.

Every fixture lists ALL the symbols expected from it, in source order, as
(kind, qualname, start_line, end_line); the parser must produce exactly that list.
"""
from __future__ import annotations

import ast
import os
import sysconfig

import pytest

from fourfold.model import Chunk, Symbol
from fourfold.parsing import installed_versions
from fourfold.parsing.grammars import GRAMMARS, get_parser
from fourfold.parsing.structure import (
    MAX_CHUNK_CHARS,
    QUERY_DIR,
    chunk_plain_text,
    extract_structure,
)


def structure(source: str | bytes, language: str) -> tuple[list[Symbol], list[Chunk]]:
    src = source.encode() if isinstance(source, str) else source
    return extract_structure(get_parser(language).parse(src), src, language)


def by_qual(symbols: list[Symbol]) -> dict[str, Symbol]:
    """Qualname -> first symbol with it (a Rust struct comes before its impl blocks)."""
    out: dict[str, Symbol] = {}
    for s in symbols:
        out.setdefault(s.qualname, s)
    return out


FIXTURES = {
    "python": (
        r'''"""mod doc"""
import os
X = 1

@decorator
class A(B):
    """A doc.

    more
    """
    y = 2
    def m(self, a):
        'm doc'
        def inner(): pass
        return 1
    class Inner:
        async def deep(self): ...

def f(x) -> int:
    return x
''',
        [
            ('variable', 'X', 3, 3),
            ('class', 'A', 6, 17),
            ('method', 'A.m', 12, 15),
            ('function', 'A.m.inner', 14, 14),
            ('class', 'A.Inner', 16, 17),
            ('method', 'A.Inner.deep', 17, 17),
            ('function', 'f', 19, 20),
        ],
    ),
    "javascript": (
        r"""import { x } from './util';

/**
 * Adds numbers.
 */
export function add(a, b) {
  return a + b;
}

class Animal extends Base {
  constructor(name) {
    this.name = name;
  }

  // Speak out loud.
  speak() {
    const helper = () => 1;
    return helper();
  }

  static create() { return new Animal('x'); }
}

const handler = async (req) => {
  return req;
};

export default class Foo {
  bar() {}
}

module.exports.util = function () {};
const MAX_SIZE = 100;
""",
        [
            ('function', 'add', 6, 8),
            ('class', 'Animal', 10, 22),
            ('method', 'Animal.constructor', 11, 13),
            ('method', 'Animal.speak', 16, 19),
            ('function', 'Animal.speak.helper', 17, 17),
            ('method', 'Animal.create', 21, 21),
            ('function', 'handler', 24, 26),
            ('class', 'Foo', 28, 30),
            ('method', 'Foo.bar', 29, 29),
            ('function', 'util', 32, 32),
            ('constant', 'MAX_SIZE', 33, 33),
        ],
    ),
    "typescript": (
        r"""import { A } from "./a";

/** A point. */
export interface Point {
  x: number;
  y: number;
  move(dx: number): void;
}

export type Id = string | number;

enum Color {
  Red,
  Green,
}

namespace Geo {
  export function area(r: number): number {
    return r * r;
  }
}

export abstract class Shape<T> implements Point {
  x = 0;
  y = 0;
  constructor(private name: string) {}
  move(dx: number): void {
    this.x += dx;
  }
  abstract draw(): void;
}

export const make = (n: number): Shape<number> => {
  return null as any;
};

function outer() {
  function inner() {}
}
declare module "foo" {
  export function bar(): void;
}
""",
        [
            ('interface', 'Point', 4, 8),
            ('field', 'Point.x', 5, 5),
            ('field', 'Point.y', 6, 6),
            ('method', 'Point.move', 7, 7),
            ('type', 'Id', 10, 10),
            ('enum', 'Color', 12, 15),
            ('namespace', 'Geo', 17, 21),
            ('function', 'Geo.area', 18, 20),
            ('class', 'Shape', 23, 31),
            ('field', 'Shape.x', 24, 24),
            ('field', 'Shape.y', 25, 25),
            ('method', 'Shape.constructor', 26, 26),
            ('method', 'Shape.move', 27, 29),
            ('method', 'Shape.draw', 30, 30),
            ('function', 'make', 33, 35),
            ('function', 'outer', 37, 39),
            ('function', 'outer.inner', 38, 38),
            ('module', 'foo', 40, 42),
            ('function', 'foo.bar', 41, 41),
        ],
    ),
    "tsx": (
        r"""import React from "react";

interface Props {
  title: string;
}

export function Header({ title }: Props) {
  return <h1>{title}</h1>;
}

export const Footer = (props: Props) => {
  return <footer>{props.title}</footer>;
};

class Page extends React.Component<Props> {
  render() {
    return <div><Header title="x" /></div>;
  }
}
""",
        [
            ('interface', 'Props', 3, 5),
            ('field', 'Props.title', 4, 4),
            ('function', 'Header', 7, 9),
            ('function', 'Footer', 11, 13),
            ('class', 'Page', 15, 19),
            ('method', 'Page.render', 16, 18),
        ],
    ),
    "go": (
        r"""package shapes

import "fmt"

// MaxSize is the limit.
const MaxSize = 10

var registry = map[string]int{}

// Shape is anything with an area.
type Shape interface {
	Area() float64
}

type Rect struct {
	W, H float64
}

// Area returns the area.
func (r *Rect) Area() float64 {
	return r.W * r.H
}

func (r Rect) String() string { return fmt.Sprint(r.W) }

func NewRect(w, h float64) *Rect {
	inner := func() {}
	inner()
	return &Rect{w, h}
}

type ID = string
""",
        [
            ('constant', 'MaxSize', 6, 6),
            ('variable', 'registry', 8, 8),
            ('interface', 'Shape', 11, 13),
            ('method', 'Shape.Area', 12, 12),
            ('struct', 'Rect', 15, 17),
            ('method', 'Rect.Area', 20, 22),
            ('method', 'Rect.String', 24, 24),
            ('function', 'NewRect', 26, 30),
            ('type', 'ID', 32, 32),
        ],
    ),
    "rust": (
        r"""use std::fmt;

/// A point in space.
#[derive(Debug)]
pub struct Point {
    x: i32,
    y: i32,
}

pub enum Shape {
    Circle(f64),
    Square(f64),
}

pub trait Area {
    fn area(&self) -> f64;
}

impl Point {
    /// Makes a point.
    pub fn new(x: i32, y: i32) -> Self {
        Point { x, y }
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}", self.x)
    }
}

mod geometry {
    pub fn distance(a: i32) -> i32 {
        fn helper() {}
        a
    }
}

const LIMIT: u32 = 5;
static NAME: &str = "x";
type Alias = Vec<Point>;

macro_rules! square {
    ($x:expr) => { $x * $x };
}

fn main() {}
""",
        [
            ('struct', 'Point', 5, 8),
            ('enum', 'Shape', 10, 13),
            ('trait', 'Area', 15, 17),
            ('method', 'Area::area', 16, 16),
            ('impl', 'Point', 19, 24),
            ('method', 'Point::new', 21, 23),
            ('impl', 'Point', 26, 30),
            ('method', 'Point::fmt', 27, 29),
            ('module', 'geometry', 32, 37),
            ('function', 'geometry::distance', 33, 36),
            ('function', 'geometry::distance::helper', 34, 34),
            ('constant', 'LIMIT', 39, 39),
            ('constant', 'NAME', 40, 40),
            ('type', 'Alias', 41, 41),
            ('macro', 'square', 43, 45),
            ('function', 'main', 47, 47),
        ],
    ),
    "java": (
        r"""package com.example;

import java.util.List;

/**
 * A user account.
 */
public class Account {
    private int balance;

    public Account(int balance) {
        this.balance = balance;
    }

    /** Deposits money. */
    @Override
    public void deposit(int amount) {
        balance += amount;
    }

    static class Ledger {
        void record() {}
    }

    enum State { OPEN, CLOSED }
}

interface Auditable {
    void audit();
}

record Pair(int a, int b) {}
""",
        [
            ('class', 'Account', 8, 26),
            ('field', 'Account.balance', 9, 9),
            ('method', 'Account.Account', 11, 13),
            ('method', 'Account.deposit', 16, 19),
            ('class', 'Account.Ledger', 21, 23),
            ('method', 'Account.Ledger.record', 22, 22),
            ('enum', 'Account.State', 25, 25),
            ('interface', 'Auditable', 28, 30),
            ('method', 'Auditable.audit', 29, 29),
            ('class', 'Pair', 32, 32),
        ],
    ),
    "c": (
        r"""#include <stdio.h>

#define MAX_ITEMS 64
#define SQUARE(x) ((x) * (x))

/* A list node. */
struct node {
    int value;
    struct node *next;
};

typedef struct {
    int x, y;
} point_t;

enum color { RED, GREEN };

int add(int a, int b);

/* Adds two ints. */
int add(int a, int b) {
    return a + b;
}

static char *name_of(struct node *n)
{
    return NULL;
}
""",
        [
            ('constant', 'MAX_ITEMS', 3, 3),
            ('macro', 'SQUARE', 4, 4),
            ('struct', 'node', 7, 10),
            ('type', 'point_t', 12, 14),
            ('enum', 'color', 16, 16),
            ('function', 'add', 18, 18),
            ('function', 'add', 21, 23),
            ('function', 'name_of', 25, 28),
        ],
    ),
    "cpp": (
        r"""#include <string>

namespace geo {

/// A circle.
class Circle : public Shape {
public:
    Circle(double r) : r_(r) {}
    double area() const override { return 3.14 * r_ * r_; }
    void scale(double f);
private:
    double r_;
};

void Circle::scale(double f) {
    r_ *= f;
}

struct Point {
    int x;
};

template <typename T>
T max_of(T a, T b) {
    return a > b ? a : b;
}

}  // namespace geo

int main() {
    return 0;
}
""",
        [
            ('namespace', 'geo', 3, 28),
            ('class', 'geo::Circle', 6, 13),
            ('method', 'geo::Circle::Circle', 8, 8),
            ('method', 'geo::Circle::area', 9, 9),
            ('method', 'geo::Circle::scale', 10, 10),
            ('method', 'geo::Circle::scale', 15, 17),
            ('struct', 'geo::Point', 19, 21),
            ('function', 'geo::max_of', 24, 26),
            ('function', 'main', 30, 32),
        ],
    ),
    "csharp": (
        r"""using System;

namespace App.Models
{
    /// <summary>A user.</summary>
    public class User : IEntity
    {
        public string Name { get; set; }
        private int age;

        public User(string name) { Name = name; }

        public void Greet()
        {
            Console.WriteLine(Name);
        }

        public class Settings
        {
            public bool Dark() => true;
        }
    }

    public interface IEntity
    {
        int Id();
    }

    public struct Vec { public int X; }

    public enum Kind { A, B }

    public record Pair(int A, int B);
}
""",
        [
            ('namespace', 'App.Models', 3, 34),
            ('class', 'App.Models.User', 6, 22),
            ('field', 'App.Models.User.Name', 8, 8),
            ('field', 'App.Models.User.age', 9, 9),
            ('method', 'App.Models.User.User', 11, 11),
            ('method', 'App.Models.User.Greet', 13, 16),
            ('class', 'App.Models.User.Settings', 18, 21),
            ('method', 'App.Models.User.Settings.Dark', 20, 20),
            ('interface', 'App.Models.IEntity', 24, 27),
            ('method', 'App.Models.IEntity.Id', 26, 26),
            ('struct', 'App.Models.Vec', 29, 29),
            ('field', 'App.Models.Vec.X', 29, 29),
            ('enum', 'App.Models.Kind', 31, 31),
            ('class', 'App.Models.Pair', 33, 33),
        ],
    ),
    "ruby": (
        r"""require 'json'

# Utilities for billing.
module Billing
  TAX = 0.2

  # An invoice.
  class Invoice < Base
    attr_reader :total

    def initialize(total)
      @total = total
    end

    # Total with tax.
    def with_tax
      total * (1 + TAX)
    end

    def self.build(x)
      new(x)
    end
  end

  def self.helper
    1
  end
end

def top_level(a)
  a
end

class Billing::Receipt
  def print; end
end
""",
        [
            ('module', 'Billing', 4, 28),
            ('constant', 'Billing.TAX', 5, 5),
            ('class', 'Billing.Invoice', 8, 23),
            ('method', 'Billing.Invoice.initialize', 11, 13),
            ('method', 'Billing.Invoice.with_tax', 16, 18),
            ('method', 'Billing.Invoice.build', 20, 22),
            ('method', 'Billing.helper', 25, 27),
            ('function', 'top_level', 30, 32),
            ('class', 'Billing.Receipt', 34, 36),
            ('method', 'Billing.Receipt.print', 35, 35),
        ],
    ),
    "php": (
        r"""<?php
namespace App\Models;

use Foo\Bar;

const VERSION = "1.0";

/**
 * A user model.
 */
class User extends Model implements HasName
{
    private $name;
    const TABLE = 'users';

    public function __construct($name)
    {
        $this->name = $name;
    }

    /** Returns the name. */
    public function getName(): string
    {
        return $this->name;
    }
}

interface HasName
{
    public function getName(): string;
}

trait Greets
{
    public function greet() { return "hi"; }
}

enum Suit: string {
    case Hearts = 'H';
    public function color(): string { return 'Red'; }
}

function helper($x) {
    return $x;
}
""",
        [
            ('namespace', 'App\\Models', 2, 2),
            ('constant', 'VERSION', 6, 6),
            ('class', 'User', 11, 26),
            ('field', 'User.name', 13, 13),
            ('constant', 'User.TABLE', 14, 14),
            ('method', 'User.__construct', 16, 19),
            ('method', 'User.getName', 22, 25),
            ('interface', 'HasName', 28, 31),
            ('method', 'HasName.getName', 30, 30),
            ('trait', 'Greets', 33, 36),
            ('method', 'Greets.greet', 35, 35),
            ('enum', 'Suit', 38, 41),
            ('method', 'Suit.color', 40, 40),
            ('function', 'helper', 43, 45),
        ],
    ),
    "kotlin": (
        r"""package com.example

import kotlin.math.PI

/** A shape. */
interface Shape {
    fun area(): Double
}

data class Circle(val r: Double) : Shape {
    override fun area(): Double = PI * r * r

    companion object {
        fun unit() = Circle(1.0)
    }
}

object Registry {
    val items = mutableListOf<Shape>()
    fun register(s: Shape) { items.add(s) }
}

enum class Color { RED, GREEN }

typealias Shapes = List<Shape>

const val MAX = 10

fun main() {
    fun local() {}
    println("hi")
}
""",
        [
            ('interface', 'Shape', 6, 8),
            ('method', 'Shape.area', 7, 7),
            ('class', 'Circle', 10, 16),
            ('method', 'Circle.area', 11, 11),
            ('method', 'Circle.unit', 14, 14),
            ('module', 'Registry', 18, 21),
            ('field', 'Registry.items', 19, 19),
            ('method', 'Registry.register', 20, 20),
            ('enum', 'Color', 23, 23),
            ('type', 'Shapes', 25, 25),
            ('constant', 'MAX', 27, 27),
            ('function', 'main', 29, 32),
            ('function', 'main.local', 30, 30),
        ],
    ),
    "swift": (
        r"""import Foundation

/// A drawable thing.
protocol Drawable {
    func draw() -> String
}

class View: Drawable {
    var frame: Int = 0

    init(frame: Int) {
        self.frame = frame
    }

    func draw() -> String {
        return "view"
    }

    class Sub {
        func go() {}
    }
}

struct Point {
    let x: Int
    func moved() -> Point { return self }
}

enum Direction {
    case north
    func opposite() -> Direction { return .north }
}

extension Point {
    func scaled() -> Point { return self }
}

func helper(a: Int) -> Int {
    return a
}

typealias Callback = () -> Void
""",
        [
            ('interface', 'Drawable', 4, 6),
            ('method', 'Drawable.draw', 5, 5),
            ('class', 'View', 8, 22),
            ('field', 'View.frame', 9, 9),
            ('method', 'View.init', 11, 13),
            ('method', 'View.draw', 15, 17),
            ('class', 'View.Sub', 19, 21),
            ('method', 'View.Sub.go', 20, 20),
            ('struct', 'Point', 24, 27),
            ('field', 'Point.x', 25, 25),
            ('method', 'Point.moved', 26, 26),
            ('enum', 'Direction', 29, 32),
            ('method', 'Direction.opposite', 31, 31),
            ('impl', 'Point', 34, 36),
            ('method', 'Point.scaled', 35, 35),
            ('function', 'helper', 38, 40),
            ('type', 'Callback', 42, 42),
        ],
    ),
    "scala": (
        r"""package example

import scala.math._

/** A shape. */
trait Shape {
  def area: Double
}

case class Circle(r: Double) extends Shape {
  def area: Double = Pi * r * r

  def scale(f: Double): Circle = {
    Circle(r * f)
  }
}

object Shapes {
  val Unit = Circle(1)
  def make(r: Double): Shape = Circle(r)
}

enum Color {
  case Red, Green
}

type Radius = Double

def topLevel(x: Int): Int = x
""",
        [
            ('trait', 'Shape', 6, 8),
            ('method', 'Shape.area', 7, 7),
            ('class', 'Circle', 10, 16),
            ('method', 'Circle.area', 11, 11),
            ('method', 'Circle.scale', 13, 15),
            ('module', 'Shapes', 18, 21),
            ('field', 'Shapes.Unit', 19, 19),
            ('method', 'Shapes.make', 20, 20),
            ('enum', 'Color', 23, 25),
            ('type', 'Radius', 27, 27),
            ('function', 'topLevel', 29, 29),
        ],
    ),
    "bash": (
        r"""#!/bin/bash
set -e

LOG_DIR=/var/log

# Prints a greeting.
greet() {
  echo "hello $1"
}

function deploy {
  inner() { echo inner; }
  inner
}

greet world
""",
        [
            ('variable', 'LOG_DIR', 4, 4),
            ('function', 'greet', 7, 9),
            ('function', 'deploy', 11, 14),
            ('function', 'deploy.inner', 12, 12),
        ],
    ),
    "lua": (
        r"""local M = {}

-- Adds two numbers.
function M.add(a, b)
  return a + b
end

function M:method(x)
  return self
end

local function helper()
  local function nested() end
  return 1
end

function global_fn() end

M.handler = function(req) return req end

return M
""",
        [
            ('function', 'M.add', 4, 6),
            ('method', 'M.method', 8, 10),
            ('function', 'helper', 12, 15),
            ('function', 'helper.nested', 13, 13),
            ('function', 'global_fn', 17, 17),
            ('function', 'M.handler', 19, 19),
        ],
    ),
    "haskell": (
        r"""module Shapes (Shape(..), area) where

import Data.List (sort)

-- | A shape.
data Shape = Circle Double | Square Double

newtype Name = Name String

type Radius = Double

class Describable a where
  describe :: a -> String

instance Describable Shape where
  describe _ = "shape"

-- | Area of a shape.
area :: Shape -> Double
area (Circle r) = pi * r * r
area (Square s) = s * s

main :: IO ()
main = print (area (Circle 1))
""",
        [
            ('module', 'Shapes', 1, 1),
            ('type', 'Shape', 6, 6),
            ('type', 'Name', 8, 8),
            ('type', 'Radius', 10, 10),
            ('interface', 'Describable', 12, 13),
            ('method', 'Describable.describe', 13, 13),
            ('impl', 'Shape', 15, 16),
            ('method', 'Shape.describe', 16, 16),
            ('function', 'area', 19, 21),
            ('function', 'main', 23, 24),
        ],
    ),
    "elixir": (
        r"""defmodule MyApp.Accounts do
  @moduledoc "Accounts context."

  @doc "Creates a user."
  def create_user(attrs) do
    attrs
  end

  defp validate(x), do: x

  defmacro my_macro(a) do
    quote do: unquote(a)
  end

  defmodule Inner do
    def run, do: :ok
  end
end

defprotocol Size do
  def size(data)
end
""",
        [
            ('module', 'MyApp.Accounts', 1, 18),
            ('function', 'MyApp.Accounts.create_user', 5, 7),
            ('function', 'MyApp.Accounts.validate', 9, 9),
            ('macro', 'MyApp.Accounts.my_macro', 11, 13),
            ('module', 'MyApp.Accounts.Inner', 15, 17),
            ('function', 'MyApp.Accounts.Inner.run', 16, 16),
            ('interface', 'Size', 20, 22),
            ('method', 'Size.size', 21, 21),
        ],
    ),
    "zig": (
        r"""const std = @import("std");

/// Maximum size.
pub const max_size: usize = 64;

/// A 2D point.
pub const Point = struct {
    x: i32,
    y: i32,

    pub fn add(self: Point, other: Point) Point {
        return .{ .x = self.x + other.x, .y = self.y + other.y };
    }
};

const Color = enum { red, green };

pub fn main() !void {
    std.debug.print("hi\n", .{});
}

test "point add" {
    _ = Point{ .x = 1, .y = 2 };
}
""",
        [
            ('constant', 'max_size', 4, 4),
            ('struct', 'Point', 7, 14),
            ('field', 'Point.x', 8, 8),
            ('field', 'Point.y', 9, 9),
            ('method', 'Point.add', 11, 13),
            ('enum', 'Color', 16, 16),
            ('function', 'main', 18, 20),
        ],
    ),
}


# ----------------------------------------------------------------------------- per language


def test_every_language_has_a_query_and_a_fixture():
    assert set(FIXTURES) == set(GRAMMARS)
    for lang in GRAMMARS:
        assert (QUERY_DIR / f"{lang}.scm").is_file(), lang


@pytest.mark.parametrize("language", sorted(FIXTURES))
def test_fixture_symbols(language):
    source, expected = FIXTURES[language]
    symbols, chunks = structure(source, language)
    got = [(s.kind, s.qualname, s.start_line, s.end_line) for s in symbols]
    assert got == expected
    # names are the last part of the qualname, parents are consistent
    sep = "::" if language in ("rust", "cpp") else "."
    for s in symbols:
        assert s.qualname.endswith(s.name)
        if s.parent is not None:
            assert s.qualname == s.parent + sep + s.name
        assert s.signature and "\n" not in s.signature and len(s.signature) <= 300
    # every definition that is not a small member/constant or a local function has a chunk
    chunk_symbols = {c.symbol for c in chunks if c.kind in ("symbol", "header")}
    for s in symbols:
        if s.kind in ("class", "struct", "interface", "trait", "impl", "enum", "module") or \
                (s.kind in ("function", "method") and (s.parent is None or by_qual(symbols).get(s.parent, s).kind
                                                        not in ("function", "method"))):
            assert s.qualname in chunk_symbols, (language, s.qualname)
    # chunks hold the source of their span
    lines = source.split("\n")
    for c in chunks:
        assert 1 <= c.start_line <= c.end_line <= len(lines)
        assert c.text == "\n".join(lines[c.start_line - 1:c.end_line])


DOCS = {
    "python": {"A": "A doc.\n\nmore", "A.m": "m doc"},
    "javascript": {"add": "Adds numbers.", "Animal.speak": "Speak out loud."},
    "typescript": {"Point": "A point."},
    "go": {"MaxSize": "MaxSize is the limit.", "Shape": "Shape is anything with an area.",
           "Rect.Area": "Area returns the area."},
    "rust": {"Point": "A point in space.", "Point::new": "Makes a point."},
    "java": {"Account": "A user account.", "Account.deposit": "Deposits money."},
    "c": {"node": "A list node."},
    "cpp": {"geo::Circle": "A circle."},
    "csharp": {"App.Models.User": "A user."},
    "ruby": {"Billing": "Utilities for billing.", "Billing.Invoice": "An invoice.",
             "Billing.Invoice.with_tax": "Total with tax."},
    "php": {"User": "A user model.", "User.getName": "Returns the name."},
    "kotlin": {"Shape": "A shape."},
    "swift": {"Drawable": "A drawable thing."},
    "scala": {"Shape": "A shape."},
    "bash": {"greet": "Prints a greeting."},
    "lua": {"M.add": "Adds two numbers."},
    "haskell": {"area": "Area of a shape."},
    "elixir": {"MyApp.Accounts.create_user": "Creates a user."},
    "zig": {"Point": "A 2D point.", "max_size": "Maximum size."},
}


@pytest.mark.parametrize("language", sorted(DOCS))
def test_docs(language):
    symbols, _ = structure(FIXTURES[language][0], language)
    quals = by_qual(symbols)
    for qual, doc in DOCS[language].items():
        assert quals[qual].doc == doc, qual


SIGNATURES = {
    ("python", "f"): "def f(x) -> int:",
    ("python", "A.Inner.deep"): "async def deep(self):",
    ("javascript", "add"): "export function add(a, b)",
    ("go", "Rect.Area"): "func (r *Rect) Area() float64",
    ("go", "Shape"): "type Shape interface",
    ("rust", "Point::fmt"): "fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result",
    ("java", "Account.deposit"): "@Override public void deposit(int amount)",
    ("c", "name_of"): "static char *name_of(struct node *n)",
    ("cpp", "geo::Circle"): "class Circle : public Shape",
    ("kotlin", "Circle"): "data class Circle(val r: Double) : Shape",
    ("scala", "Circle.scale"): "def scale(f: Double): Circle",
}


@pytest.mark.parametrize("language,qual", sorted(SIGNATURES))
def test_signatures(language, qual):
    symbols, _ = structure(FIXTURES[language][0], language)
    assert by_qual(symbols)[qual].signature == SIGNATURES[(language, qual)]


def test_python_decorated_start_line_and_chunk_keeps_decorator():
    symbols, chunks = structure(FIXTURES["python"][0], "python")
    a = by_qual(symbols)["A"]
    assert a.start_line == 6  # the `class` line, as ast reports it
    chunk = next(c for c in chunks if c.symbol == "A" and c.kind == "symbol")
    assert chunk.start_line == 5 and chunk.text.startswith("@decorator")


def test_parents_and_out_of_line_definitions():
    symbols, _ = structure(FIXTURES["cpp"][0], "cpp")
    out_of_line = [s for s in symbols if s.qualname == "geo::Circle::scale"]
    assert [(s.kind, s.start_line, s.parent) for s in out_of_line] == [
        ("method", 10, "geo::Circle"), ("method", 15, "geo::Circle")]
    go = by_qual(structure(FIXTURES["go"][0], "go")[0])
    assert go["Rect.Area"].parent == "Rect" and go["Rect.Area"].kind == "method"
    assert go["NewRect"].parent is None and go["NewRect"].kind == "function"


# ----------------------------------------------------------------------------- chunks


def _big_python_class(methods: int = 30) -> str:
    out = ["import os", "", "", "class Big:", '    """Big class."""', "", "    LIMIT = 3", ""]
    for i in range(methods):
        out += [f"    def m{i}(self, x):", f"        y = x + {i}", "        return y", ""]
    out += ["", "def after():", "    return 1", ""]
    return "\n".join(out)


def test_large_class_is_header_plus_methods():
    source = _big_python_class()
    symbols, chunks = structure(source, "python")
    big = by_qual(symbols)["Big"]
    assert big.end_line - big.start_line + 1 > 120
    assert not any(c.symbol == "Big" and c.kind == "symbol" for c in chunks)
    header = [c for c in chunks if c.symbol == "Big" and c.kind == "header"]
    assert len(header) == 1
    assert header[0].start_line == 4 and header[0].end_line == 7
    assert "LIMIT = 3" in header[0].text and "def m0" not in header[0].text
    method_chunks = [c for c in chunks if c.symbol and c.symbol.startswith("Big.m")]
    assert len(method_chunks) == 30
    assert all(c.end_line - c.start_line == 2 for c in method_chunks)
    assert any(c.symbol == "after" for c in chunks)
    assert any(c.kind == "window" and c.text == "import os" for c in chunks)


def test_small_class_chunk_and_methods():
    symbols, chunks = structure(FIXTURES["javascript"][0], "javascript")
    spans = {(c.symbol, c.kind): (c.start_line, c.end_line) for c in chunks}
    assert spans[("Animal", "symbol")] == (10, 22)
    assert spans[("Animal.speak", "symbol")] == (15, 19)  # includes the comment above
    assert ("Animal.speak.helper", "symbol") not in spans  # local function: in its parent's chunk


def test_module_level_code_is_windowed_and_covered():
    body = "\n".join(f"x{i} = {i}" for i in range(100))
    source = body + "\n\n\ndef f():\n    return 1\n\n\n" + "\n".join(f"print({i})" for i in range(50)) + "\n"
    symbols, chunks = structure(source, "python")
    windows = [c for c in chunks if c.kind == "window"]
    assert all(c.end_line - c.start_line + 1 <= 40 for c in windows)
    covered = set()
    for c in chunks:
        covered.update(range(c.start_line, c.end_line + 1))
    meaningful = {i + 1 for i, line in enumerate(source.split("\n")) if line.strip()}
    assert meaningful <= covered
    assert not any(c.text.strip() == "" for c in chunks)


def test_long_function_is_split_into_pieces_of_the_same_symbol():
    source = "def long():\n" + "\n".join(f"    v{i} = {i}" for i in range(450)) + "\n"
    _, chunks = structure(source, "python")
    pieces = [c for c in chunks if c.symbol == "long"]
    # 451 lines in four even pieces of at most 200, end to end
    assert [(c.start_line, c.end_line) for c in pieces] == [(1, 113), (114, 226), (227, 339),
                                                             (340, 451)]


def test_plain_text_markdown_splits_at_headings():
    md = "# Title\n\nIntro line one.\nIntro line two.\n\n## Install\n\nRun this.\nThen that.\nDone.\n\n" \
         "```\n# not a heading\ncode\n```\n\n## Usage\n\n" + "\n\n".join(f"Paragraph {i}." for i in range(60))
    chunks = chunk_plain_text(md)
    assert chunks[0].start_line == 1 and chunks[0].text.startswith("# Title")
    starts = [(c.start_line, c.end_line, c.text.split("\n")[0]) for c in chunks]
    # split at the real headings, not at the one in the code block; then by size
    assert starts == [(1, 4, "# Title"), (6, 15, "## Install"), (17, 75, "## Usage"),
                      (77, 135, "Paragraph 29."), (137, 137, "Paragraph 59.")]
    assert all(c.kind == "text" for c in chunks)
    assert all(c.end_line - c.start_line + 1 <= 60 for c in chunks)
    lines = md.split("\n")
    for c in chunks:
        assert c.text == "\n".join(lines[c.start_line - 1:c.end_line])


def test_plain_text_merges_small_paragraphs():
    text = "\n\n".join(f"key{i}: value{i}\nother{i}: x" for i in range(100))  # 299 lines
    chunks = chunk_plain_text(text)
    sizes = [c.end_line - c.start_line + 1 for c in chunks]
    assert all(20 <= s <= 60 for s in sizes[:-1]), sizes
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 299
    assert chunk_plain_text("") == [] and chunk_plain_text("\n\n  \n") == []


# ----------------------------------------------------------------------------- malformed


@pytest.mark.parametrize("language", sorted(FIXTURES))
def test_truncated_and_garbage_never_crash(language):
    source = FIXTURES[language][0].encode()
    for cut in (0, 1, len(source) // 3, len(source) // 2, len(source) - 3):
        symbols, chunks = structure(source[:cut], language)
        lines = source[:cut].decode(errors="replace").split("\n")
        for c in chunks:
            assert 1 <= c.start_line <= c.end_line <= len(lines)
    symbols, chunks = structure(b"\xff\xfe\x00garbage \x80\x81 {{{ ((( \n" * 50, language)
    assert symbols == []  # nothing to define, but every line is still searchable
    assert [(c.start_line, c.end_line, c.kind) for c in chunks] == [(1, 25, "window"),
                                                                    (26, 50, "window")]
    assert structure(b"", language) == ([], [])


def test_syntax_error_keeps_recoverable_definitions():
    source = "def good(a):\n    return a\n\ndef broken(:\n    pass\n\nclass After:\n    def m(self):\n        return 1\n"
    assert [s.qualname for s in structure(source, "python")[0]] == ["good", "broken", "After",
                                                                     "After.m"]
    js = "function ok() { return 1 }\nfunction bad( { \nclass K { m() { return 2 } }\n"
    # the error swallows `bad` and the class line; the method in it is still found
    assert [s.qualname for s in structure(js, "javascript")[0]] == ["ok", "m"]
    truncated = FIXTURES["java"][0][:FIXTURES["java"][0].index("static class Ledger")]
    assert [s.qualname for s in structure(truncated, "java")[0]] == [
        "Account", "Account.balance", "Account.Account", "Account.deposit"]


def test_non_utf8_bytes_and_line_numbers():
    source = b"# caf\xe9 \xff\xfe\n\ndef f():\n    return '\xe9'\n\nclass C:\n    pass\n"
    symbols, chunks = structure(source, "python")
    assert [(s.qualname, s.start_line, s.end_line) for s in symbols] == [("f", 3, 4), ("C", 6, 7)]
    assert "\ufffd" in chunks[0].text


def test_huge_minified_line_is_capped():
    fn = "function f%d(a){return a+%d}"
    source = ("var x=1;" + ";".join(fn % (i, i) for i in range(20000)) + ";").encode()
    assert len(source) > 500_000
    symbols, chunks = structure(source, "javascript")
    assert len(symbols) == 20000  # `var x` is not a top-level const
    assert all(s.start_line == 1 and len(s.signature) <= 300 for s in symbols)
    # one chunk, cut at the cap: the 20,000 functions share line 1, and identical spans are
    # not repeated
    assert [(c.start_line, c.end_line, c.symbol, len(c.text)) for c in chunks] == [
        (1, 1, "f0", MAX_CHUNK_CHARS)]


def test_crlf_and_no_trailing_newline():
    source = "class A:\r\n    def m(self):\r\n        return 1\r\n\r\ndef g():\r\n    pass"
    symbols, chunks = structure(source, "python")
    assert [(s.qualname, s.start_line, s.end_line) for s in symbols] == [("A", 1, 3), ("A.m", 2, 3), ("g", 5, 6)]
    assert chunks[-1].end_line == 6


# ----------------------------------------------------------------------------- ast agreement


def _stdlib_sample(n: int = 150) -> list[str]:
    root = sysconfig.get_paths()["stdlib"]
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in ("site-packages", "__pycache__"))
        files.extend(os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith(".py"))
    step = max(1, len(files) // n)
    return files[::step][:n]


def test_ast_agreement_on_stdlib_sample():
    files = _stdlib_sample()
    assert len(files) >= 100
    total = found = 0
    for path in files:
        with open(path, "rb") as fh:
            src = fh.read()
        try:
            tree = ast.parse(src)
        except (SyntaxError, ValueError):
            continue
        expected = [(n.name, n.lineno) for n in ast.walk(tree)
                    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        symbols, _ = structure(src, "python")
        have = {(s.name, s.start_line) for s in symbols if s.kind in ("function", "method", "class")}
        total += len(expected)
        found += sum(1 for e in expected if e in have)
    assert total > 2000
    assert found / total >= 0.99, (found, total)


def test_c_typedef_struct_is_not_nested_in_the_typedef():
    source = "/* A stream. */\ntypedef struct z_stream_s {\n    int avail;\n} z_stream;\n"
    symbols, chunks = structure(source, "c")
    assert [(s.kind, s.qualname, s.parent, s.start_line, s.end_line) for s in symbols] == [
        ("type", "z_stream", None, 2, 4), ("struct", "z_stream_s", None, 2, 4)]
    assert symbols[0].doc == "A stream."
    assert [(c.start_line, c.end_line, c.symbol) for c in chunks] == [(1, 1, None), (2, 4, "z_stream_s")]


@pytest.mark.parametrize("language", ["javascript", "typescript", "tsx"])
def test_an_export_from_clause_names_reexports(language):
    src = b"export { a, b as c } from './x';\nexport { d };\nexport * from './y';\nfunction d() {}\n"
    symbols, _ = structure(src, language)
    assert [(s.name, s.kind) for s in symbols] == [("a", "reexport"), ("c", "reexport"),
                                                   ("d", "function")]


@pytest.mark.parametrize("language", sorted(FIXTURES))
def test_one_parse_reads_what_a_second_parse_from_the_bytes_reads(language, monkeypatch):
    """Where a language's query tests no node text, its file is parsed once, through the
    read callback of the time limit; the symbols, chunks and references are those of the
    tree parsed again from the bytes."""
    from fourfold import parsing

    source = FIXTURES[language][0].encode()
    once = parsing.parse_file(source, language)
    query = parsing._file_query

    def reparsed(lang, references):
        compiled, split, _ = query(lang, references)
        return compiled, split, True
    monkeypatch.setattr(parsing, "_file_query", reparsed)
    again = parsing.parse_file(source, language)
    assert (once.symbols, once.chunks, once.references) == \
        (again.symbols, again.chunks, again.references)
    assert once.symbols or once.references


def test_installed_versions_are_those_importlib_metadata_reads(tmp_path, monkeypatch):
    """The parser's fingerprint names each grammar's installed version, read from the
    names of the .dist-info folders: the same as importlib.metadata's, the first on
    sys.path winning as it does for an import."""
    from importlib import metadata

    packages = ["tree-sitter", *sorted({module.replace("_", "-")
                                        for module, _ in GRAMMARS.values()})]
    assert installed_versions([*packages, "no-such-project-here"]) == {
        package: metadata.version(package) for package in packages}
    (tmp_path / "tree_sitter_python-9.9.9.dist-info").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    assert installed_versions(["tree-sitter-python"]) == {"tree-sitter-python": "9.9.9"}
