"""The positions page's two equations, as KaTeX: the sinusoidal table and rotary's rotation."""

# One equation per line, so each fits an 800 px screen; no negative space (\!), which
# makes KaTeX's box narrower than what it draws (a 2 px scroll bar).
FORMULA = (r"\begin{aligned} PE_{(pos,\,2i)} &= \sin\left(\frac{pos}{10000^{2i/d_{model}}}"
           r"\right) \\ PE_{(pos,\,2i+1)} &= \cos\left(\frac{pos}{10000^{2i/d_{model}}}"
           r"\right) \end{aligned}")
ROTARY_FORMULA = (r"\begin{aligned} \theta_i &= \text{base}^{-2i/d_{head}} \\ "
                  r"\langle R_m q,\; R_n k\rangle &= \langle R_{m-n}\, q,\; k\rangle "
                  r"\end{aligned}")
