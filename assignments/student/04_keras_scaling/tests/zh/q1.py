from otter.test_files import test_case

OK_FORMAT = False

name = "q1"
points = 2

@test_case(points=None, hidden=False)
def test_tf_config(tf_config):
    assert isinstance(tf_config, dict), 'tf_config 还不是字典：把 ... 换成一个字典'
    assert set(tf_config) == {'cluster', 'task'}, 'TF_CONFIG 有两个键：cluster 和 task'

