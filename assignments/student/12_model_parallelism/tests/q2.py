from otter.test_files import test_case

OK_FORMAT = False

name = "q2"
points = 3

@test_case(points=None, hidden=False)
def test_zero1_bytes(zero1_bytes):
    assert zero1_bytes(8, 4) is not None, 'returns None: replace ... with your code'
    assert zero1_bytes(8, 4) == 32 + 32 + 16, '8 parameters on 4 replicas: 2 per shard'
    assert zero1_bytes(100, 1) == 1600, 'one replica: plain Adam, 16 bytes per parameter'

