"""One mixin per section of the assembled message; the Assembler composes them."""
