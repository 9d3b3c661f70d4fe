"""The features serving each request method, by concept, in both eras (`turn.serves`
registers them; `core.dispatch` builds its one table from what they register)."""
